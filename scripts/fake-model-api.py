#!/usr/bin/env python3
"""A fake model API for scripts/harness-e2e: python3 standard library only.

It speaks just enough of three providers' HTTP APIs for one agent turn to
finish with a canned answer, and records every request it receives so the
test can look for aea's reminder in what the harness sent to the model:

- Anthropic Messages: POST .../v1/messages (JSON, or SSE with "stream": true)
  and .../v1/messages/count_tokens, GET .../v1/models.
- OpenAI: POST .../responses (the Responses API, SSE or JSON) and
  .../chat/completions (SSE or JSON), GET .../models.
- Gemini: POST .../models/M:generateContent, :streamGenerateContent
  (?alt=sse or a JSON array), :countTokens, GET .../models.

Every request path starts with /r/LABEL/ (the test gives each session its own
LABEL in the base URL); the request is recorded as
RECORD_DIR/LABEL/NNNN.json ({"method", "path", "query", "body"}; headers
are not recorded, so no key of any kind is kept) and then answered as if
LABEL were not there.

Mail arriving mid-turn: when RECORD_DIR/LABEL/trigger.match exists and a
model request's body contains its text, RECORD_DIR/LABEL/trigger.sh is run
once (synchronously, before the answer is sent) and the request is noted in
RECORD_DIR/LABEL/trigger.fired. The test uses it to deliver a message while
the harness is waiting for the model.

A peer flooding a session: when RECORD_DIR/LABEL/flood.match and flood.max
exist, RECORD_DIR/LABEL/flood.sh runs before every model request whose body
contains flood.match's text (and whose path contains flood.path's, when
that exists), at most flood.max times; flood.count says how many times it
ran.

A tool call first: when RECORD_DIR/LABEL/tool-call.json exists ({"name",
"arguments"}), a chat/completions request whose last message is the user's
and holds no tool result yet is answered with that one tool call instead of
text; once the harness sends the tool's result back, it gets the usual answer. Harnesses whose hooks speak
only around tool calls (Cline CLI's PostToolUse) need a turn that uses a tool.

The server binds 127.0.0.1 only, writes its port to --port-file and stops
by itself after --max-seconds.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

ANSWER = "Fake model here: nothing to do. E2E-ANSWER"

LOCK = threading.Lock()
COUNTERS = {}


def record(record_dir, label, entry):
    folder = os.path.join(record_dir, label)
    with LOCK:
        os.makedirs(folder, exist_ok=True)
        n = COUNTERS.get(label, 0) + 1
        COUNTERS[label] = n
        path = os.path.join(folder, "%04d.json" % n)
        entry["seq"] = n
        entry["time"] = time.time()
        with open(path + ".tmp", "w") as f:
            json.dump(entry, f, indent=1)
        os.rename(path + ".tmp", path)
    return n


def maybe_trigger(record_dir, label, raw_body):
    folder = os.path.join(record_dir, label)
    match_file = os.path.join(folder, "trigger.match")
    script = os.path.join(folder, "trigger.sh")
    with LOCK:
        try:
            with open(match_file) as f:
                needle = f.read().strip()
        except OSError:
            return
        if not needle or needle not in raw_body:
            return
        # Once only: the match file goes before the script runs.
        os.rename(match_file, match_file + ".used")
    result = subprocess.run(
        ["bash", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60
    )
    with open(os.path.join(folder, "trigger.fired"), "w") as f:
        json.dump(
            {
                "after_request": COUNTERS.get(label, 0),
                "exit": result.returncode,
                "output": result.stdout.decode("utf-8", "replace")[-4000:],
            },
            f,
        )


def maybe_flood(record_dir, label, path, raw_body):
    """A peer that delivers one message before every model call of LABEL
    whose body holds the needle in flood.match (and whose path holds the
    text in flood.path, when there is one), up to flood.max times: runs
    flood.sh and counts the deliveries in flood.count."""
    folder = os.path.join(record_dir, label)
    with LOCK:
        try:
            with open(os.path.join(folder, "flood.match")) as f:
                needle = f.read().strip()
            with open(os.path.join(folder, "flood.max")) as f:
                most = int(f.read().strip())
        except (OSError, ValueError):
            return
        try:
            with open(os.path.join(folder, "flood.path")) as f:
                in_path = f.read().strip()
        except OSError:
            in_path = ""
        if not needle or needle not in raw_body or in_path not in path:
            return
        count_file = os.path.join(folder, "flood.count")
        try:
            with open(count_file) as f:
                n = int(f.read().strip())
        except (OSError, ValueError):
            n = 0
        if n >= most:
            return
        with open(count_file, "w") as f:
            f.write(str(n + 1))
    subprocess.run(
        ["bash", os.path.join(folder, "flood.sh")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )


def sse(events):
    """events: list of (event name or None, data dict or str)."""
    out = []
    for name, data in events:
        if name:
            out.append("event: %s\n" % name)
        if not isinstance(data, str):
            data = json.dumps(data)
        out.append("data: %s\n\n" % data)
    return "".join(out).encode()


# ---------------------------------------------------------------- Anthropic


def anthropic(body, tool_call=None):
    """The fixed answer, or one tool_use block asking for TOOL_CALL
    ({"name", "arguments"})."""
    model = body.get("model", "claude-fake")
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if tool_call is not None:
        block = {
            "type": "tool_use",
            "id": "toolu_fake_%d" % int(time.time() * 1000),
            "name": tool_call["name"],
            "input": tool_call.get("arguments", {}),
        }
        opening = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ANSWER}
        opening = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": ANSWER}
        stop = "end_turn"
    message = {
        "id": "msg_fake_%d" % int(time.time() * 1000),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return "application/json", json.dumps(message).encode()
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    return "text/event-stream", sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


# ---------------------------------------------------------------- tool plans
#
# RECORD_DIR/LABEL/tool-plan.json: a list of {"tool": SUFFIX, "arguments":
# {...}} the model works through, one call per request: the Nth request
# that holds N-1 tool results (and offers a tool whose name holds "aea" and
# ends with SUFFIX, whatever prefix the harness gives MCP tools) gets the
# Nth call; "$REF" in an argument becomes the first aea reference (m + hex)
# in the latest tool result. Then the usual answer.


def tool_names(body):
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def tool_results(body):
    """The texts of the tool results in the conversation, in order
    (Anthropic tool_result blocks, OpenAI chat role "tool")."""
    texts = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            texts.append(json.dumps(m.get("content"), ensure_ascii=False))
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    texts.append(json.dumps(block.get("content"), ensure_ascii=False))
    return texts


def planned_call(record_dir, label, body):
    try:
        with open(os.path.join(record_dir, label, "tool-plan.json")) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    results = tool_results(body)
    if len(results) >= len(plan):
        return None
    step = plan[len(results)]
    suffix = step["tool"]
    name = next(
        (n for n in tool_names(body) if "aea" in n and re.search(r"[_.]%s$" % re.escape(suffix), n)),
        None,
    )
    if name is None:
        return None
    ref = ""
    if results:
        found = re.search(r"\bm[0-9a-f]{8,}\b", results[-1])
        ref = found.group(0) if found else ""
    arguments = json.loads(json.dumps(step.get("arguments", {})).replace("$REF", ref))
    return {"name": name, "arguments": arguments}


# ---------------------------------------------------------------- OpenAI


def openai_responses(body):
    model = body.get("model", "gpt-fake")
    now = int(time.time())
    rid = "resp_fake_%d" % int(time.time() * 1000)
    mid = "msg_fake_%d" % int(time.time() * 1000)
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    item_done = {
        "id": mid,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
    }

    def response(status, output, with_usage):
        r = {
            "id": rid,
            "object": "response",
            "created_at": now,
            "status": status,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
        }
        if with_usage:
            r["usage"] = usage
        return r

    if not body.get("stream"):
        return "application/json", json.dumps(response("completed", [item_done], True)).encode()
    return "text/event-stream", sse(
        [
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": response("in_progress", [], False)}),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "sequence_number": 1,
                    "output_index": 0,
                    "item": dict(item_done, status="in_progress", content=[]),
                },
            ),
            (
                "response.content_part.added",
                {
                    "type": "response.content_part.added",
                    "sequence_number": 2,
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                },
            ),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": 3,
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": ANSWER,
                    "logprobs": [],
                },
            ),
            (
                "response.output_text.done",
                {
                    "type": "response.output_text.done",
                    "sequence_number": 4,
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "text": ANSWER,
                    "logprobs": [],
                },
            ),
            (
                "response.content_part.done",
                {
                    "type": "response.content_part.done",
                    "sequence_number": 5,
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": ANSWER, "annotations": []},
                },
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "sequence_number": 6, "output_index": 0, "item": item_done},
            ),
            (
                "response.completed",
                {"type": "response.completed", "sequence_number": 7, "response": response("completed", [item_done], True)},
            ),
        ]
    )


def tool_call_wanted(record_dir, label, body):
    """The tool call of RECORD_DIR/LABEL/tool-call.json when the request
    ends with the user's message and holds no tool result yet, else None."""
    try:
        with open(os.path.join(record_dir, label, "tool-call.json")) as f:
            call = json.load(f)
    except (OSError, ValueError):
        return None
    messages = body.get("messages") or []
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        return None
    if any(isinstance(m, dict) and m.get("role") == "tool" for m in messages):
        return None
    return call


def openai_chat(body, tool_call=None):
    model = body.get("model", "gpt-fake")
    now = int(time.time())
    cid = "chatcmpl_fake_%d" % int(time.time() * 1000)
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if tool_call is not None:
        call = {
            "id": "call_fake_%d" % int(time.time() * 1000),
            "type": "function",
            "function": {"name": tool_call["name"], "arguments": json.dumps(tool_call.get("arguments", {}))},
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        deltas = [{"role": "assistant", "content": None, "tool_calls": [dict(call, index=0)]}]
    else:
        message, finish = {"role": "assistant", "content": ANSWER}, "stop"
        deltas = [{"role": "assistant", "content": ""}, {"content": ANSWER}]
    if not body.get("stream"):
        return "application/json", json.dumps(
            {
                "id": cid,
                "object": "chat.completion",
                "created": now,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        ).encode()

    def chunk(delta, finish, with_usage=False):
        c = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": now,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if with_usage:
            c["usage"] = usage
        return (None, c)

    return "text/event-stream", sse(
        [chunk(d, None) for d in deltas] + [chunk({}, finish, True), (None, "[DONE]")]
    )


# ---------------------------------------------------------------- Gemini


def value_for_schema(schema, name=""):
    """A small value that satisfies a JSON schema (Gemini CLI asks for JSON
    in its side calls: next speaker, model routing, loop detection...)."""
    if not isinstance(schema, dict):
        return "fake"
    t = schema.get("type")
    if isinstance(t, list):
        t = t[0] if t else None
    t = (t or "").lower()
    if schema.get("enum"):
        values = schema["enum"]
        # Never hand the turn back to the model: the fake answers once.
        if name == "next_speaker" and "user" in values:
            return "user"
        return values[0]
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: value_for_schema(v, k) for k, v in props.items()}
    if t == "array":
        return []
    if t in ("integer", "number"):
        # Gemini CLI's router asks for a complexity score of at least 1.
        return schema.get("minimum", 0)
    if t == "boolean":
        return False
    return "fake"


def gemini_json_answer(body):
    cfg = body.get("generationConfig") or body.get("generation_config") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    if schema is not None:
        return json.dumps(value_for_schema(schema))
    if cfg.get("responseMimeType") == "application/json":
        return "{}"
    return None


def gemini(body, model, stream, alt):
    text = gemini_json_answer(body) or ANSWER
    chunk = {
        "candidates": [
            {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
        "responseId": "fake_%d" % int(time.time() * 1000),
    }
    if not stream:
        return "application/json", json.dumps(chunk).encode()
    if alt == "sse":
        return "text/event-stream", sse([(None, chunk)])
    return "application/json", json.dumps([chunk]).encode()


# ---------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aea-fake-model-api/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-model-api: " + (fmt % args) + "\n")

    def send(self, status, ctype, payload):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def handle_any(self, method):
        parts = urlsplit(self.path)
        m = re.match(r"^/r/([A-Za-z0-9._-]+)(/.*)?$", parts.path)
        if not m:
            self.send(404, "application/json", b'{"error":{"message":"path must start with /r/LABEL/"}}')
            return
        label, path = m.group(1), m.group(2) or "/"
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding", "").lower() in ("gzip", "zstd", "br"):
            raw = self.decode(raw, self.headers.get("Content-Encoding").lower())
        text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = text
        query = parse_qs(parts.query)
        record(
            self.server.record_dir,
            label,
            {
                "method": method,
                "path": path,
                "query": query,
                "user_agent": self.headers.get("User-Agent", ""),
                "body": body,
            },
        )
        if not isinstance(body, dict):
            body = {}
        is_model_call = method == "POST" and (
            path.endswith("/messages")
            or path.endswith("/responses")
            or path.endswith("/chat/completions")
            or "generatecontent" in path.lower()
        )
        if is_model_call:
            maybe_trigger(self.server.record_dir, label, text)
            maybe_flood(self.server.record_dir, label, path, text)
        status, ctype, payload = 200, None, None
        gm = re.search(r"/models/([^/:]+):(\w+)$", path)
        if method == "POST" and path.endswith("/messages/count_tokens"):
            ctype, payload = "application/json", b'{"input_tokens": 10}'
        elif method == "POST" and path.endswith("/messages"):
            ctype, payload = anthropic(body, planned_call(self.server.record_dir, label, body))
        elif method == "POST" and path.endswith("/responses"):
            ctype, payload = openai_responses(body)
        elif method == "POST" and path.endswith("/chat/completions"):
            ctype, payload = openai_chat(
                body,
                tool_call_wanted(self.server.record_dir, label, body)
                or planned_call(self.server.record_dir, label, body),
            )
        elif method == "POST" and gm and gm.group(2) == "countTokens":
            ctype, payload = "application/json", b'{"totalTokens": 10}'
        elif method == "POST" and gm and gm.group(2) in ("generateContent", "streamGenerateContent"):
            ctype, payload = gemini(
                body, gm.group(1), gm.group(2) == "streamGenerateContent", (query.get("alt") or [""])[0]
            )
        elif method == "GET" and re.search(r"/models/?$", path):
            ctype, payload = "application/json", json.dumps(
                {
                    "object": "list",
                    "data": [
                        {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake", "type": "model",
                         "display_name": "Fake model"}
                    ],
                    "models": [{"name": "models/fake-model", "displayName": "Fake model"}],
                    "has_more": False,
                }
            ).encode()
        else:
            status, ctype = 404, "application/json"
            payload = json.dumps({"error": {"type": "not_found", "message": "fake API: no %s %s" % (method, path)}}).encode()
        self.send(status, ctype, payload)

    @staticmethod
    def decode(raw, encoding):
        if encoding == "gzip":
            import gzip

            return gzip.decompress(raw)
        return raw  # zstd/br are not in the standard library; recorded as is

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_HEAD(self):
        self.handle_any("HEAD")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record-dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-seconds", type=int, default=1800)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.record_dir, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.record_dir = args.record_dir
    server.verbose = args.verbose
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    # Stops by itself: a test that dies never leaves it behind for long.
    timer = threading.Timer(args.max_seconds, server.shutdown)
    timer.daemon = True
    timer.start()
    server.serve_forever()


if __name__ == "__main__":
    main()
