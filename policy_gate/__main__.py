"""``python -m policy_gate``: the same as the ``policy-gate`` command."""

import sys

from policy_gate.gate import main

sys.exit(main())
