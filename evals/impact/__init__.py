"""Proof of the impact measurement on simulated fleets (issue #31): ``fleets`` (the statistics, over
thousands of seeded fleets, through ``store.impact``) and ``drive`` (fleets driven end to end through the
real Claude Code hook and harness adapter code paths, into a real store)."""
