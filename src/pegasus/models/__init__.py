"""The plain values passed between modules, one room per concern: `batch` (the extraction
batch contract and its cleaned form), `reports` (what a write did), `recall` (what a message
recalls), `views` (what the facade's inspection methods return)."""
