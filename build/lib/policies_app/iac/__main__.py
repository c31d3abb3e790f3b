import sys

from policies_app.iac.cli import main

sys.exit(main())
