// aea:owned: plugin (written by `aea init`; `aea uninstall` removes it)
//
// Tells the model how much AEA mail waits with each message, and gives an
// idle session a turn when new mail arrived. It only relays the output of
// `aea check --hook opencode`: counts and aea's own short references, never
// anything another agent wrote. Plugin API: opencode.ai/docs/plugins
// (`chat.message`, `event` with `session.idle`, `client.session.promptAsync`;
// checked against OpenCode 1.18.33 by scripts/harness-e2e).
import { execFile } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";

// aea on OpenCode's PATH, else where `cargo install` puts it: this file is
// committed, so it names no path of one machine.
const AEA = ["aea", join(homedir(), ".cargo", "bin", "aea")];
let missingSaid = false;

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
// so that aea remembers per session what it said, and the start of the
// message's text: a turn this plugin gave the session on idle starts with
// aea's own words, and is no person's prompt (the Stop cap holds). A
// missing or broken aea says nothing and never breaks the session.
function remind(directory, sessionID, event, prompt = "", at = 0) {
  return new Promise((resolve) => {
    const child = execFile(
      AEA[at],
      ["check", "--hook", "opencode", "--event", event],
      { cwd: directory, timeout: 5000 },
      (err, stdout) => {
        if (err && err.code === "ENOENT") {
          if (at + 1 < AEA.length) return resolve(remind(directory, sessionID, event, prompt, at + 1));
          if (!missingSaid) console.error("aea: not found on PATH or in ~/.cargo/bin: mail not checked (install aea)");
          missingSaid = true;
        }
        resolve(err ? "" : String(stdout).trim());
      },
    );
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ session_id: sessionID, hook_event_name: event, prompt }));
  });
}

export const AeaPlugin = async ({ client, directory }) => ({
  "chat.message": async (input, output) => {
    const prompt = (output.parts || [])
      .filter((part) => part.type === "text" && typeof part.text === "string")
      .map((part) => part.text)
      .join("\n")
      .slice(0, 200);
    const text = await remind(directory, input.sessionID, "chat.message", prompt);
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
