"""Python MCP SDK (`mcp` 2.3.0) client driven by test/clients/python-mcp.test.ts.

Connects to COUNTERSIGN_MCP_URL with COUNTERSIGN_TOKEN (it negotiates 2026-07-28 on its own),
lists tools, makes an allowed call (ALLOWED_MEMO), makes a requestable call without the tasks
extension (PLAIN_MEMO: the approval is opened; withdrawn here with the approval_cancel tool), then
makes two such calls with a small ClientExtension declaring `io.modelcontextprotocol/tasks` whose
ResultClaim for `resultType: "task"` follows the task with `tasks/get` (SEP-2663) until it is
terminal (TASK_MEMO, which the test approves, and DENY_MEMO, which it denies; each preceded by a
`task-call` event naming the memo), and one (SUBSCRIBE_MEMO, approved once `task-subscribed` is
printed) with an extension that follows the task by `subscriptions/listen` (the tasks extension's
Task Status Notifications): a NotificationBinding receives each `notifications/tasks`, and the
task is polled only if the stream ends before a terminal one arrives. Prints one JSON object per
line on stdout for the test to read (`task-poll` before each tasks/get, `task-notice` for each
notification); exits 0 when every step ran.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Literal

import httpx2
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import BaseModel, ConfigDict, Field

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


TERMINAL = ("completed", "failed", "cancelled")


async def follow_task(created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
    """Poll tasks/get at the server's interval until the task is terminal; return its CallToolResult."""
    emit("task-created", taskId=created.task_id, status=created.status)
    return await poll_task(created, ctx)


async def poll_task(created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
    while True:
        emit("task-poll", taskId=created.task_id)
        state = await ctx.session.send_request(
            GetTaskRequest(method="tasks/get", params=TaskIdParams(taskId=created.task_id)), TaskState
        )
        if state.status in TERMINAL:
            emit("task-terminal", taskId=state.task_id, status=state.status, via="tasks/get")
            return final_result(state)
        await asyncio.sleep((state.poll_interval_ms or 500) / 1000)


def final_result(task: TaskState | TaskNotice) -> CallToolResult:
    if task.status == "completed" and task.result is not None:
        return CallToolResult.model_validate(task.result)
    text = f"task {task.status}: {json.dumps(task.error)}"
    return CallToolResult(content=[{"type": "text", "text": text}], is_error=True)


class TaskNotice(BaseModel):
    """`notifications/tasks` params: the whole task, as tasks/get returns it."""

    model_config = ConfigDict(extra="allow")
    task_id: str = Field(alias="taskId")
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class ListenParams(RequestParams):
    notifications: dict[str, list[str]]


class ListenTasksRequest(Request[ListenParams, Literal["subscriptions/listen"]]):
    pass


class ListenResult(Result):
    """The stream's end: the server answers the listen request once every task it follows is terminal."""

    model_config = ConfigDict(extra="allow")


class SubscribingTasksExtension(ClientExtension):
    """Declares the tasks extension; follows each task by subscriptions/listen, polling only when the stream ends first."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[TaskNotice]] = {}

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.follow)]

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/tasks", params_type=TaskNotice, handler=self.on_task)]

    async def on_task(self, task: TaskNotice) -> None:
        emit("task-notice", taskId=task.task_id, status=task.status)
        waiter = self.waiting.get(task.task_id)
        if waiter is not None and not waiter.done():
            if task.status not in TERMINAL:
                emit("task-subscribed", taskId=task.task_id)  # the current state, first on the stream
            else:
                waiter.set_result(task)

    async def follow(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        emit("task-created", taskId=created.task_id, status=created.status)
        waiter: asyncio.Future[TaskNotice] = asyncio.get_running_loop().create_future()
        self.waiting[created.task_id] = waiter
        listen = asyncio.create_task(
            ctx.session.send_request(
                ListenTasksRequest(method="subscriptions/listen", params=ListenParams(notifications={"taskIds": [created.task_id]})),
                ListenResult,
            )
        )
        try:
            await asyncio.wait({listen, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.waiting.pop(created.task_id, None)
            listen.cancel()
        if waiter.done():
            emit("task-terminal", taskId=created.task_id, status=waiter.result().status, via="notifications/tasks")
            return final_result(waiter.result())
        # the stream ended first: the id was not acknowledged, the request refused, or the stream cut
        return await poll_task(created, ctx)


class TasksExtension(ClientExtension):
    """Declares io.modelcontextprotocol/tasks and resolves task results by polling tasks/get."""

    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=follow_task)]


def transport() -> Any:
    return streamable_http_client(URL, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}))


def streaming_transport() -> Any:
    """A read timeout above the server's 15 s keep-alive, so an idle subscription stream is not cut (httpx2's default is 5 s)."""
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30, read=300))
    return streamable_http_client(URL, http_client=client)


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

    async with Client(streaming_transport(), extensions=[SubscribingTasksExtension()]) as client:
        memo = os.environ["SUBSCRIBE_MEMO"]
        emit("task-call", memo=memo)
        final = await client.call_tool("wire_transfer", {"to": "acct-991", "amount": 50000, "memo": memo})
        emit("task-result", memo=memo, result=dump(final))


if __name__ == "__main__":
    asyncio.run(main())
