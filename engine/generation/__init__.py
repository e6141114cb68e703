"""Generation loops, one module per family; each yields engine.events."""
