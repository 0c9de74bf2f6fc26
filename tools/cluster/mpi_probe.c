/* mpi_probe: where did each rank land, and does the network between hosts work?
 *   mpi_probe [hang]
 * Rank 0 prints, in rank order, one line per rank:
 *   rank=R host=H shared_size=S shared_rank=L proc=P cpus=C
 * (C: how many CPUs the rank may run on, from sched_getaffinity: the machine's count when it is not bound)
 * then "allreduce ok sum=..." and "sendrecv ok bytes=... ranks 0(H0)<->R(H1) seconds=...": a 64 MB
 * MPI_Sendrecv between rank 0 and the lowest rank on another host (skipped with one host).
 * With "hang" every rank then loops on MPI_Barrier + 50 ms sleep forever (rank 0 first prints "READY"): used
 * to kill one host's ranks mid-run. Exit code 1 on any check failing. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME 64
#define BYTES (64u << 20)

int main(int argc, char **argv) {
  int rank, size, lsize, lrank, plen, ok = 1;
  char host[NAME] = {0}, proc[MPI_MAX_PROCESSOR_NAME] = {0};
  MPI_Comm shared;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gethostname(host, NAME - 1);
  MPI_Get_processor_name(proc, &plen);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  MPI_Comm_size(shared, &lsize);
  MPI_Comm_rank(shared, &lrank);

  cpu_set_t cpus;
  int ncpus = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : -1;
  char line[256], *all = NULL;
  snprintf(line, sizeof line, "rank=%d host=%s shared_size=%d shared_rank=%d proc=%.64s cpus=%d", rank, host,
           lsize, lrank, proc, ncpus);
  char *hosts = malloc((size_t)size * NAME);
  MPI_Allgather(host, NAME, MPI_CHAR, hosts, NAME, MPI_CHAR, MPI_COMM_WORLD);
  if (rank == 0) all = malloc((size_t)size * sizeof line);
  MPI_Gather(line, sizeof line, MPI_CHAR, all, sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; r++) printf("%s\n", all + (size_t)r * sizeof line);

  long mine = rank, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != (long)size * (size - 1) / 2) ok = 0;
  if (rank == 0) printf("allreduce %s sum=%ld\n", ok ? "ok" : "FAILED", sum);

  int peer = -1; /* lowest rank on another host than rank 0 */
  for (int r = 1; r < size && peer < 0; r++)
    if (strcmp(hosts + (size_t)r * NAME, hosts) != 0) peer = r;
  if (peer > 0 && (rank == 0 || rank == peer)) {
    int other = rank == 0 ? peer : 0;
    unsigned char *out = malloc(BYTES), *in = malloc(BYTES);
    for (size_t i = 0; i < BYTES; i++) out[i] = (unsigned char)(i * 7 + rank);
    double t = MPI_Wtime();
    MPI_Sendrecv(out, BYTES, MPI_BYTE, other, 7, in, BYTES, MPI_BYTE, other, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    t = MPI_Wtime() - t;
    for (size_t i = 0; i < BYTES; i++)
      if (in[i] != (unsigned char)(i * 7 + other)) { ok = 0; break; }
    if (rank == 0)
      printf("sendrecv %s bytes=%u ranks 0(%s)<->%d(%s) seconds=%.3f\n", ok ? "ok" : "FAILED", BYTES, host, peer,
             hosts + (size_t)peer * NAME, t);
    free(out); free(in);
  } else if (rank == 0 && peer < 0) {
    printf("sendrecv skipped: one host\n");
  }
  int all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "hang") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { printf("READY\n"); fflush(stdout); }
    for (;;) { MPI_Barrier(MPI_COMM_WORLD); usleep(50000); }
  }
  MPI_Comm_free(&shared);
  free(hosts); free(all);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
