// aea:owned: plugin (written by `aea init`; `aea uninstall` removes it)
//
// Tells the model how much AEA mail waits with each message, and gives an
// idle session a turn when new mail arrived. It only relays the output of
// `aea check --hook opencode`: counts and aea's own short references, never
// anything another agent wrote. Plugin API: opencode.ai/docs/plugins
// (`chat.message`, `event` with `session.idle`, `client.session.prompt`).
import { execFileSync } from "node:child_process";

const AEA = @AEA@;

function remind(directory, sessionID, event) {
  try {
    return execFileSync(AEA, ["check", "--hook", "opencode", "--event", event], {
      cwd: directory,
      input: JSON.stringify({ session_id: sessionID, hook_event_name: event }),
      encoding: "utf8",
      timeout: 5000,
      stdio: ["pipe", "pipe", "ignore"],
    }).trim();
  } catch {
    // A missing or broken aea never breaks the session.
    return "";
  }
}

export const AeaPlugin = async ({ client, directory }) => ({
  "chat.message": async (input, output) => {
    const text = remind(directory, input.sessionID, "chat.message");
    if (text) {
      const first = output.parts[0] ?? {};
      output.parts.push({
        ...(first.id ? { id: first.id + "-aea" } : {}),
        sessionID: input.sessionID,
        messageID: first.messageID ?? output.message?.id,
        type: "text",
        text,
        synthetic: true,
      });
    }
  },
  event: async ({ event }) => {
    if (event.type !== "session.idle") return;
    const sessionID = event.properties?.sessionID;
    if (!sessionID) return;
    const text = remind(directory, sessionID, "session.idle");
    if (text) {
      await client.session.prompt({
        path: { id: sessionID },
        body: { parts: [{ type: "text", text }] },
      });
    }
  },
});
