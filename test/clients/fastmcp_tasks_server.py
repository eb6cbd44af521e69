"""A tasks server on another implementation: FastMCP 4.1.4 (on the official Python MCP SDK, `mcp`
2.3.0) with fastmcp-tasks 4.1.4, its io.modelcontextprotocol/tasks (SEP-2663) extension, in memory.
For test/clients/fastmcp-tasks-server.test.ts; nothing here knows about approval.

Usage: python3 fastmcp_tasks_server.py <port>
"""
import asyncio
import sys

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-tasks fixture")
mcp.add_extension(TasksExtension())


@mcp.tool(task=True)
async def slow_echo(text: str, seconds: float = 0.5) -> str:
    """Waits `seconds`, then returns `text`."""
    await asyncio.sleep(seconds)
    return f"echo: {text}"


@mcp.tool(task=True)
async def failing_job(text: str) -> str:
    """Raises: a tool error."""
    raise ValueError(f"failing on purpose: {text}")


@mcp.tool(task=True)
async def confirm(text: str, ctx: Context):
    """Asks for a confirmation inside the task (input_required, answered with tasks/update; the
    guard pattern fastmcp-tasks asks for), then says what the answer was."""
    responses = ctx.input_responses
    if not responses or "confirm" not in responses:
        return mcp_types.InputRequiredResult(
            input_requests={
                "confirm": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Proceed with {text}?",
                        requested_schema={"type": "object", "properties": {"proceed": {"type": "boolean"}}, "required": ["proceed"]},
                    )
                )
            }
        )
    answer = responses["confirm"]
    content = getattr(answer, "content", None) or (answer.get("content") if isinstance(answer, dict) else None)
    action = getattr(answer, "action", None) or (answer.get("action") if isinstance(answer, dict) else None)
    return f"{action}: {content}"


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
