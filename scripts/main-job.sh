#!/usr/bin/env bash
# The main job: compiles an example IDL with structopc and shows what it made
# of it (lowered schemas and a slot-map table). Installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  meson setup build -Dpython=/usr/bin/python3 >/dev/null
fi
ninja -C build compiler/structopc >/dev/null

idl=idl_examples/weights.ops.yaml
out=build/main-job
mkdir -p "$out"
echo "== structopc --emit json $idl"
build/compiler/structopc --emit json -o "$out" "$idl"
/usr/bin/python3 - "$out/weights.ops.json" <<'PY'
import json, sys
model = json.load(open(sys.argv[1]))
for op in model["ops"]:
    print(f"torch.ops.{model['namespace']}.{op['name']}: {op['schema']}")
PY
echo
echo "== structopc --explain op $idl"
build/compiler/structopc --explain op "$idl"
