"""What the agent is told about its tools: Claude Code's names, descriptions and argument
shapes (the Messages API's `tools`), implemented by `tools.Toolbox`."""

from __future__ import annotations

from typing import Any


def tool_definitions(*, with_skill: bool) -> list[dict[str, Any]]:
    """The tools offered to the agent; `Skill` only in skill-loading conditions."""
    tools: list[dict[str, Any]] = [
        {
            "name": "Read",
            "description": "Reads a file from the local filesystem. Returns the content with "
            "line numbers (cat -n format). Use offset and limit for long files.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The path of the file"},
                    "offset": {"type": "integer", "description": "Line to start from (1-based)"},
                    "limit": {"type": "integer", "description": "Number of lines to read"},
                },
                "required": ["file_path"],
            },
        },
        {
            "name": "Write",
            "description": "Writes a file to the local filesystem, replacing it if it exists.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "content": {"type": "string"},
                },
                "required": ["file_path", "content"],
            },
        },
        {
            "name": "Edit",
            "description": "Performs exact string replacement in a file. old_string must be "
            "unique in the file unless replace_all is true.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean", "default": False},
                },
                "required": ["file_path", "old_string", "new_string"],
            },
        },
        {
            "name": "Glob",
            "description": "Finds files by glob pattern (e.g. **/*.py), sorted by path.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "Directory to search in"},
                },
                "required": ["pattern"],
            },
        },
        {
            "name": "Grep",
            "description": "Searches file contents with a regular expression.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"},
                    "glob": {"type": "string", "description": "Only files matching this glob"},
                    "output_mode": {
                        "type": "string",
                        "enum": ["content", "files_with_matches", "count"],
                    },
                    "-i": {"type": "boolean", "description": "Case insensitive"},
                },
                "required": ["pattern"],
            },
        },
        {
            "name": "Bash",
            "description": "Executes a bash command in the working directory and returns its "
            "output. Commands time out after 120 s unless timeout (ms) says otherwise.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout": {"type": "integer", "description": "Timeout in milliseconds"},
                    "description": {"type": "string"},
                },
                "required": ["command"],
            },
        },
    ]
    if with_skill:
        tools.append(
            {
                "name": "Skill",
                "description": "Loads a skill by name and returns its instructions. Use it "
                "when a listed skill applies to the task.",
                "input_schema": {
                    "type": "object",
                    "properties": {"skill": {"type": "string", "description": "The skill name"}},
                    "required": ["skill"],
                },
            }
        )
    return tools
