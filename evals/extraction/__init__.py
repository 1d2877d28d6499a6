"""The extraction evaluation: extraction on real agent logs scored against what each log proves."""
