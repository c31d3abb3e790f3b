"""The pipeline's client of the platform (``policy-gate``): standard library only, installed on CI runners
on its own (``pip install`` of this repository installs this package and nothing of the server)."""
