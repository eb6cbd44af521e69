"""Python MCP SDK (`mcp` 2.3.0) client driven by test/clients/python-mcp.test.ts.

Connects to COUNTERSIGN_MCP_URL with COUNTERSIGN_TOKEN (it negotiates 2026-07-28 on its own),
lists tools, makes an allowed call (ALLOWED_MEMO), makes a requestable call without the tasks
extension (PLAIN_MEMO: the approval is opened; withdrawn here with the approval_cancel tool), then
makes two such calls with a small ClientExtension declaring `io.modelcontextprotocol/tasks` whose
ResultClaim for `resultType: "task"` follows the task with `tasks/get` (SEP-2663) until it is
terminal (TASK_MEMO, which the test approves, and DENY_MEMO, which it denies; each preceded by a
`task-call` event naming the memo). Prints one JSON object per line on stdout for the test to
read; exits 0 when every step ran.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Literal

import httpx2
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict, Field

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
URL = os.environ["COUNTERSIGN_MCP_URL"]
TOKEN = os.environ["COUNTERSIGN_TOKEN"]


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class CreateTaskResult(Result):
    """`resultType: "task"` answer to tools/call (SEP-2663, flat shape)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskState(Result):
    """`tasks/get` result: the task, with `result` (a CallToolResult) once completed."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["complete"] = "complete"
    task_id: str
    status: str
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(RequestParams):
    task_id: str = Field(alias="taskId")


class GetTaskRequest(Request[TaskIdParams, Literal["tasks/get"]]):
    name_param = "taskId"


async def follow_task(created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
    """Poll tasks/get at the server's interval until the task is terminal; return its CallToolResult."""
    emit("task-created", taskId=created.task_id, status=created.status)
    while True:
        state = await ctx.session.send_request(
            GetTaskRequest(method="tasks/get", params=TaskIdParams(taskId=created.task_id)), TaskState
        )
        if state.status in ("completed", "failed", "cancelled"):
            emit("task-terminal", taskId=state.task_id, status=state.status)
            if state.status == "completed" and state.result is not None:
                return CallToolResult.model_validate(state.result)
            text = f"task {state.status}: {json.dumps(state.error)}"
            return CallToolResult(content=[{"type": "text", "text": text}], is_error=True)
        await asyncio.sleep((state.poll_interval_ms or 500) / 1000)


class TasksExtension(ClientExtension):
    """Declares io.modelcontextprotocol/tasks and resolves task results by polling tasks/get."""

    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=follow_task)]


def transport() -> Any:
    return streamable_http_client(URL, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}))


def dump(result: CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main() -> None:
    async with Client(transport()) as client:
        emit("connected", protocolVersion=client.protocol_version)
        tools = await client.list_tools()
        emit("tools", names=[t.name for t in tools.tools])
        allowed = await client.call_tool("wire_transfer", {"to": "acct-100", "amount": 100, "memo": os.environ["ALLOWED_MEMO"]})
        emit("allowed", result=dump(allowed))
        plain = await client.call_tool("wire_transfer", {"to": "acct-991", "amount": 50000, "memo": os.environ["PLAIN_MEMO"]})
        emit("plain", result=dump(plain))
        approval_id = (plain.structured_content or {}).get("approvalId")
        if approval_id:
            cancelled = await client.call_tool("approval_cancel", {"approvalId": approval_id})
            emit("plain-cancelled", result=dump(cancelled))

    async with Client(transport(), extensions=[TasksExtension()]) as client:
        for memo in (os.environ["TASK_MEMO"], os.environ["DENY_MEMO"]):
            emit("task-call", memo=memo)
            final = await client.call_tool("wire_transfer", {"to": "acct-991", "amount": 50000, "memo": memo})
            emit("task-result", memo=memo, result=dump(final))


if __name__ == "__main__":
    asyncio.run(main())
