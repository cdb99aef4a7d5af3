"""sparkreport: LLM-inference benchmark runs in, a statistically honest results site out."""

__version__ = "0.1.0"
