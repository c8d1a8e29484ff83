// aea:owned: plugin (written by `aea init`; `aea uninstall` removes it)
//
// Tells the model how much AEA mail waits with each message, and gives an
// idle session a turn when new mail arrived. It only relays the output of
// `aea check --hook opencode`: counts and aea's own short references, never
// anything another agent wrote. Plugin API: opencode.ai/docs/plugins
// (`chat.message`, `event` with `session.idle`, `client.session.promptAsync`;
// checked against OpenCode 1.18.33 by scripts/harness-e2e).
import { execFile } from "node:child_process";

const AEA = @AEA@;

// OpenCode's part ids: "prt_", 12 hex digits (milliseconds * 4096 + a
// counter), 14 base62 characters.
let counter = 0;
function partID() {
  const time = (BigInt(Date.now()) * 4096n + BigInt(++counter % 4096))
    .toString(16)
    .padStart(12, "0");
  const chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let rand = "";
  for (let i = 0; i < 14; i++) rand += chars[Math.floor(Math.random() * chars.length)];
  return "prt_" + time + rand;
}

// Runs the hook with the session on stdin, as the other harnesses pass it,
// so that aea remembers per session what it said. A missing or broken aea
// says nothing and never breaks the session.
function remind(directory, sessionID, event) {
  return new Promise((resolve) => {
    const child = execFile(
      AEA,
      ["check", "--hook", "opencode", "--event", event],
      { cwd: directory, timeout: 5000 },
      (err, stdout) => resolve(err ? "" : String(stdout).trim()),
    );
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ session_id: sessionID, hook_event_name: event }));
  });
}

export const AeaPlugin = async ({ client, directory }) => ({
  "chat.message": async (input, output) => {
    const text = await remind(directory, input.sessionID, "chat.message");
    if (!text) return;
    output.parts.push({
      id: partID(),
      sessionID: input.sessionID,
      messageID: output.message.id,
      type: "text",
      text,
      synthetic: true,
    });
  },
  event: async ({ event }) => {
    if (event.type !== "session.idle") return;
    const sessionID = event.properties?.sessionID;
    if (!sessionID) return;
    const text = await remind(directory, sessionID, "session.idle");
    if (!text) return;
    await client.session.promptAsync({
      path: { id: sessionID },
      query: { directory },
      body: { parts: [{ type: "text", text }] },
    });
  },
});
