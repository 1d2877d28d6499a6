"""fixmem: fix memory for coding agents. The composition root: CLI, settings and wiring."""
