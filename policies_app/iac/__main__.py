"""``python -m policies_app.iac DIR``: evaluate a configuration (see cli.py)."""

import sys

from policies_app.iac.bytecode import keep_bytecode_in_user_cache

keep_bytecode_in_user_cache()

from policies_app.iac.cli import main  # noqa: E402  (after the bytecode's place is set)

sys.exit(main())
