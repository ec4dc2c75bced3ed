"""The person's control over their memory (design §10): see it, correct it, forget it.

`see` lists memories and one memory's history; `correct` retracts a memory, renames an entity,
edits its aliases and merges two entities by hand (undoable); `forget` erases one memory, one
entity, one conversation or everything of a user, wherever the words live. The facade
(`pegasus.Memory`) and every surface (CLI, HTTP, MCP) call these and nothing else.
"""
