"""Faithful local fakes of the outside services, for tests and the demo."""
