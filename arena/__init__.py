"""arena: benchmark large language models as forecasters on paper-traded prediction markets."""

__version__ = "0.1.0"
