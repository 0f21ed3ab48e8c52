"""Print the Nth ```bash block of README.md, so CI runs exactly what the README tells users."""

import re
import sys
from pathlib import Path

blocks = re.findall(r"^```bash\n(.*?)^```", Path("README.md").read_text(), re.M | re.S)
print(blocks[int(sys.argv[1]) - 1].strip())
