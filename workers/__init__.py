"""Workers: RQ job functions (thin I/O) and the pure extraction core (event in, entry out)."""
