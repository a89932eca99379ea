import sys

from punctuated.cli import main

sys.exit(main())
