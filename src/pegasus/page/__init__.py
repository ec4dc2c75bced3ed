"""The memory page's parts that hold no HTTP: its templates, its static files, its picture."""
