"""The pure extraction core: a turn event in, a fix entry (or a reason for none) out."""
