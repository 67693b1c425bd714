"""The gpufleet component plugin: serves GpuStack to Pulumi programs in any language.

The engine (through the Python language host) runs `python provider <engine address>`; the plugin prints
the port of its ResourceProvider gRPC server on stdout, as every provider plugin does.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # gpufleet and components live in the repository this folder belongs to
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpufleet_plugin import serve  # noqa: E402

if __name__ == "__main__":
    serve(sys.argv[1:])
