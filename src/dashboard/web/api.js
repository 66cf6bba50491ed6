// Requests to the dtrain server. When the dashboard was opened as /?token=XYZ (the server
// listens beyond loopback), every request carries the token, and links to files carry it in
// their query, since a plain <a href> cannot send a header.
//
// URLs are relative ("api/jobs", not "/api/jobs") so the dashboard also works behind a
// reverse proxy that mounts it under a path prefix.

const TOKEN = new URLSearchParams(window.location.search).get('token');

export class ApiError extends Error {
  // status 0: no HTTP answer at all (server down, network gone).
  constructor(status, message) {
    super(message);
    this.status = status;
  }

  get isNotFound() {
    return this.status === 404;
  }

  // No answer at all: the banner already says so, pages need not repeat it.
  get isNetwork() {
    return this.status === 0;
  }
}

// Connection health, for the page banner: listeners get null when requests succeed again
// and a message while they fail. Only transitions are reported.
const healthListeners = new Set();
let currentProblem = null;

export function onConnectionProblem(listener) {
  healthListeners.add(listener);
  listener(currentProblem);
  return () => healthListeners.delete(listener);
}

function reportProblem(problem) {
  if (problem === currentProblem) return;
  currentProblem = problem;
  for (const listener of healthListeners) listener(problem);
}

// GET `path` (relative, e.g. "api/jobs") with optional query parameters (null ones left out);
// resolves to the parsed JSON or rejects with an ApiError.
export async function getJson(path, query = {}) {
  const url = withQuery(path, query);
  const headers = TOKEN ? { 'X-Dtrain-Token': TOKEN } : {};
  let response;
  try {
    response = await fetch(url, { headers, cache: 'no-store' });
  } catch (err) {
    reportProblem('Cannot reach the dtrain server; retrying…');
    throw new ApiError(0, `network error: ${err.message}`);
  }
  if (response.status === 401 || response.status === 403) {
    reportProblem('The server refused the request: open the dashboard with the ?token=… link the server printed.');
  } else if (response.status >= 500) {
    reportProblem(`The server answered ${response.status}; retrying…`);
  } else {
    reportProblem(null);
  }
  const body = await readJsonBody(response);
  if (!response.ok) {
    const message = (body && typeof body.error === 'string' && body.error) || `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  if (body === undefined) throw new ApiError(response.status, 'the server sent something that is not JSON');
  return body;
}

async function readJsonBody(response) {
  try {
    return await response.json();
  } catch {
    return undefined;
  }
}

function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined) params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

// The URL of a file in a job's directory, e.g. fileUrl("mnist", "output/model.tar.gz").
export function fileUrl(jobId, relativePath) {
  const encodedPath = String(relativePath).split('/').map(encodeURIComponent).join('/');
  const url = `files/${encodeURIComponent(jobId)}/${encodedPath}`;
  return TOKEN ? `${url}?token=${encodeURIComponent(TOKEN)}` : url;
}

// Streams (metrics, logs) are read in chunks from an offset. A reply may end before the end
// of the file (the server caps a chunk): then the caller should ask again at once instead of
// waiting for its next poll. Logs say so with `size`; for metrics, a chunk of many samples is
// taken as a sign that more are waiting. An empty reply never counts: a line still being
// written also leaves next < size, and asking again at once would spin until it ends.
export function streamHasMore(reply, itemCount) {
  if (itemCount === 0) return false;
  if (Number.isFinite(reply.size) && Number.isFinite(reply.next)) return reply.next < reply.size;
  return itemCount >= 1000;
}

// The file behind a stream was rewritten (a job run again under the same name): the server
// starts over at 0, so `next` comes back below the offset asked for.
export function streamRestarted(from, reply) {
  return Number.isFinite(from) && Number.isFinite(reply.next) && reply.next < from;
}

export const jobApiPath = (jobId, rest = '') => `api/jobs/${encodeURIComponent(jobId)}${rest}`;
