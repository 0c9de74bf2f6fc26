#!/usr/bin/env bash
# Installs dependencies (apt), builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
# The pinned diffusers environment, so that ctest parity.reference_unchanged re-records every reference with
# diffusers and checks it still equals the committed one (quick when it is there).
bash tools/reference/setup.sh
bash tools/check-format.sh
bash tools/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "${BUILD_DIR:-build}"
# Label gpu: tests that need a GPU, run by tools/gpu/check.sh on a GPU machine. As many tests at once as the
# machine has cores ($CTEST_JOBS to change it): the suite's many 4-rank runs wait on each other's collectives
# more than on a core, and the tests that must not share the machine (the memory plan, the cluster) are RUN_SERIAL.
ctest --output-on-failure --timeout 900 -LE gpu -j "${CTEST_JOBS:-$(nproc)}" ${CTEST_ARGS:-}
# The manual's recipes (README.md, docs/): every command block marked as one, on the tiny models
# (docs/development.md#recipes); prints how many ran.
bash "$OLDPWD/tools/recipes.sh" "$PWD"
