#!/usr/bin/env bash
# The layer rule (docs/DESIGN.md section 1), checked on the sources: each lib/ layer includes only layers below
# it (core < dist < hsdp < io < text < models < generator < sched < pipeline < config < job), and links exactly the layers it includes
# (its omni_add_layer line in lib/<layer>/CMakeLists.txt).
#   layers.sh SOURCE_DIR
set -euo pipefail
src=$1
order=(core dist hsdp io text models generator sched pipeline config job)
fails=0
for ((i = 0; i < ${#order[@]}; i++)); do
  layer=${order[$i]}
  includes=$(grep -ho '#include "[a-z_]*/' "$src"/lib/"$layer"/*.h "$src"/lib/"$layer"/*.cpp 2>/dev/null |
    sed 's/#include "//; s|/$||' | sort -u | grep -vx "$layer" || true)
  links=$(grep -o "omni_add_layer($layer [^)]*)" "$src/lib/$layer/CMakeLists.txt" | grep -o 'omni_[a-z_]*' |
    grep -v '^omni_add_layer$' | sed 's/^omni_//' | sort -u || true)
  for inc in $includes; do
    below=0
    for ((j = 0; j < i; j++)); do [ "${order[$j]}" = "$inc" ] && below=1; done
    [ $below = 1 ] || { echo "FAIL: lib/$layer includes $inc/, which is not a layer below it"; fails=$((fails + 1)); }
  done
  if [ "$includes" != "$links" ]; then
    echo "FAIL: lib/$layer includes [$(echo $includes)] but links [$(echo $links)]"
    fails=$((fails + 1))
  else
    echo "ok: lib/$layer includes and links [$(echo $includes)]"
  fi
done
[ $fails = 0 ] && echo "layers: the include graph is the link graph, and every edge goes down"
exit $((fails > 0))
