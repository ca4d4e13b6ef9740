// The Publish page's upload: a token for this dataset alone (POST /publish/{slug}/token with
// the session's cookie and CSRF token), the schema file if one is chosen, then the file sent
// to the API as an asynchronous write; the bar follows the bytes sent, then the job's phase
// and records read until it ends.
const form = document.getElementById("upload");
const bar = document.getElementById("upload-progress");
const status = document.getElementById("upload-status");
const button = document.getElementById("upload-button");

const TYPES = [
  [".csv", "text/csv"],
  [".ndjson", "application/x-ndjson"],
  [".jsonl", "application/x-ndjson"],
  [".json", "application/json"],
];

// The body's type and encoding from the file's name, as `odqs import` reads a name.
function bodyType(name) {
  const lower = name.toLowerCase();
  const gzip = lower.endsWith(".gz");
  const base = gzip ? lower.slice(0, -3) : lower;
  const found = TYPES.find(([ending]) => base.endsWith(ending));
  return found ? { type: found[1], gzip } : null;
}

function say(text) {
  status.textContent = text;
}

async function uploadToken(slug, csrf) {
  const response = await fetch(`/publish/${encodeURIComponent(slug)}/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: "csrf=" + encodeURIComponent(csrf),
    credentials: "same-origin",
  });
  if (!response.ok) throw new Error("The session has ended: log in again.");
  return (await response.json()).token;
}

async function putSchema(slug, token, file) {
  const response = await fetch(`/api/v1/datasets/${encodeURIComponent(slug)}/schema.json`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: file,
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.message);
}

// The file as an asynchronous write; resolves with the job's URL.
function putFile(slug, token, file, kind) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("PUT", `/api/v1/datasets/${encodeURIComponent(slug)}`);
    request.setRequestHeader("Authorization", `Bearer ${token}`);
    request.setRequestHeader("Content-Type", kind.type);
    if (kind.gzip) request.setRequestHeader("Content-Encoding", "gzip");
    request.setRequestHeader("Prefer", "respond-async");
    request.upload.addEventListener("progress", (event) => {
      if (!event.lengthComputable) return;
      bar.max = event.total;
      bar.value = event.loaded;
      say(`Sending: ${Math.round((100 * event.loaded) / event.total)}%`);
    });
    request.addEventListener("load", () => {
      let body = {};
      try {
        body = JSON.parse(request.responseText);
      } catch (_) {}
      if (request.status === 202) resolve(request.getResponseHeader("Location"));
      else reject(new Error(body.message || `The upload was refused (${request.status}).`));
    });
    request.addEventListener("error", () => reject(new Error("The upload was cut.")));
    request.send(file);
  });
}

async function followJob(location, token) {
  bar.removeAttribute("value");
  for (;;) {
    const response = await fetch(location, { headers: { Authorization: `Bearer ${token}` } });
    const job = await response.json();
    if (!response.ok) throw new Error(job.message);
    if (job.state === "done") return job.result;
    if (job.state === "failed") throw new Error(job.error.message);
    say(`Publishing: ${job.phase}, ${job.records_read} records read`);
    await new Promise((wake) => setTimeout(wake, 500));
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const slug = form.dataset.slug;
  const file = document.getElementById("data-file").files[0];
  const schema = document.getElementById("schema-file").files[0];
  if (!file) return;
  const kind = bodyType(file.name);
  if (!kind) {
    say("The file's name must end in .csv, .ndjson, .jsonl or .json, optionally followed by .gz.");
    return;
  }
  button.disabled = true;
  bar.hidden = false;
  bar.value = 0;
  try {
    const token = await uploadToken(slug, form.dataset.csrf);
    if (schema) await putSchema(slug, token, schema);
    const location = await putFile(slug, token, file, kind);
    const result = await followJob(location, token);
    bar.max = 1;
    bar.value = 1;
    say(
      result.unchanged
        ? `Unchanged: version ${result.version} already holds these records.`
        : `Published version ${result.version}: ${result.record_count} records.`,
    );
    status.dataset.version = String(result.version);
  } catch (error) {
    bar.hidden = true;
    say(error.message);
  } finally {
    button.disabled = false;
  }
});
