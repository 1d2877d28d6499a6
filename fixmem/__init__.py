"""fixmem: fix memory for coding agents. The composition root: CLI, settings and wiring.

The documented Python API::

    from fixmem import FixMemory
    memory = FixMemory(data_dir="/var/lib/fixmem")
    entry = memory.record_from_turn("alice", project_key="/home/u/app", user_message="…", tool_events=[…])
    block = memory.prompt_block(memory.recall("alice", "/home/u/app", "fix the login timeout"))

or the same as module functions on a memory built from the environment (``FIXMEM_DATA_DIR`` …):
``fixmem.record_from_turn``, ``fixmem.recall``, ``fixmem.prompt_block``, ``fixmem.stats``, ``fixmem.forget``.
"""

from fixmem.memory import FixMemory, forget, prompt_block, recall, record_from_turn, stats

__all__ = ["FixMemory", "forget", "prompt_block", "recall", "record_from_turn", "stats"]
