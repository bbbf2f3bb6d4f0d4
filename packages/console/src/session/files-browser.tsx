/**
 * The session's files, through the airlock: list, view text, download and
 * upload are tool calls (files.list, files.read, files.write) on the same
 * route an agent uses, so the contract decides and the audit records each.
 */
import { useEffect, useState } from 'preact/hooks';
import type { FileInfo, SessionInfo } from '../api-types';
import { callTool } from '../tool-calls';
import { BusyNote } from '../components/busy-note';
import { ErrorBanner } from '../components/error-banner';
import { formatBytes, formatInstant } from '../format';

/** Largest file shown inline; larger ones are downloaded. */
const VIEW_LIMIT_BYTES = 512 * 1024;

interface ReadResult extends Record<string, unknown> {
  content: string;
  encoding: 'utf8' | 'base64';
  size: number;
  truncated: boolean;
}

function join(directory: string, name: string): string {
  return directory.endsWith('/') ? `${directory}${name}` : `${directory}/${name}`;
}

function parentOf(path: string): string {
  const cut = path.replace(/\/+$/, '').lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

/** The files panel of a session. */
export function FilesBrowser({ session }: { session: SessionInfo }) {
  const [directory, setDirectory] = useState('/workspace');
  const [entries, setEntries] = useState<FileInfo[] | null>(null);
  const [viewing, setViewing] = useState<{ path: string; text: string | null; size: number; truncated: boolean } | null>(null);
  const [busy, setBusy] = useState<{ label: string; since: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [version, setVersion] = useState(0);
  const asleep = session.state === 'suspended' || session.state === 'paused';
  const usable = session.state !== 'terminated' && session.state !== 'creating';

  async function run<T>(label: string, work: () => Promise<T>): Promise<T | undefined> {
    setBusy({ label: asleep ? `${label} (waking the ${session.state} machine first)` : label, since: Date.now() });
    setError(null);
    try {
      return await work();
    } catch (failure) {
      setError(failure);
      return undefined;
    } finally {
      setBusy(null);
    }
  }

  useEffect(() => {
    if (!usable) return;
    void run(`Listing ${directory}…`, async () => {
      const answer = await callTool<{ entries: FileInfo[] }>(session.id, 'files.list', { path: directory });
      setEntries([...answer.entries].sort((a, b) => (a.type === 'directory' ? 0 : 1) - (b.type === 'directory' ? 0 : 1) || a.name.localeCompare(b.name)));
    });
  }, [session.id, directory, version, usable]);

  async function view(entry: FileInfo): Promise<void> {
    await run(`Reading ${entry.path}…`, async () => {
      const read = await callTool<ReadResult>(session.id, 'files.read', { path: entry.path, maxBytes: VIEW_LIMIT_BYTES });
      setViewing({ path: entry.path, text: read.encoding === 'utf8' ? read.content : null, size: read.size, truncated: read.truncated });
    });
  }

  async function download(path: string): Promise<void> {
    await run(`Downloading ${path}…`, async () => {
      const read = await callTool<ReadResult>(session.id, 'files.read', { path, encoding: 'base64', maxBytes: 64 * 1024 * 1024 });
      const bytes = Uint8Array.from(atob(read.content), (character) => character.charCodeAt(0));
      const url = URL.createObjectURL(new Blob([bytes]));
      const link = document.createElement('a');
      link.href = url;
      link.download = path.split('/').pop() ?? 'file';
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  }

  async function upload(file: File): Promise<void> {
    await run(`Uploading ${file.name}…`, async () => {
      const buffer = new Uint8Array(await file.arrayBuffer());
      let binary = '';
      for (let offset = 0; offset < buffer.length; offset += 0x8000) binary += String.fromCharCode(...buffer.subarray(offset, offset + 0x8000));
      await callTool(session.id, 'files.write', { path: join(directory, file.name), content: btoa(binary), encoding: 'base64' });
      setVersion((value) => value + 1);
    });
  }

  if (!usable) return <p class="muted">The files of a {session.state} session cannot be reached.</p>;
  return (
    <div class="files" data-testid="files">
      <div class="files-bar">
        <button type="button" disabled={directory === '/' || busy !== null} onClick={() => setDirectory(parentOf(directory))} aria-label="Up one directory">
          ↑
        </button>
        <code class="files-path" data-testid="files-path">
          {directory}
        </code>
        <button type="button" disabled={busy !== null} onClick={() => setVersion((value) => value + 1)}>
          Refresh
        </button>
        <label class="upload">
          Upload
          <input type="file" disabled={busy !== null} onChange={(event) => {
            const input = event.target as HTMLInputElement;
            const file = input.files?.[0];
            if (file) void upload(file).finally(() => (input.value = ''));
          }} />
        </label>
      </div>
      {busy ? <BusyNote label={busy.label} since={busy.since} /> : null}
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      {entries ? (
        <table class="file-list">
          <tbody>
            {entries.length === 0 ? (
              <tr>
                <td class="muted">empty directory</td>
              </tr>
            ) : null}
            {entries.map((entry) => (
              <tr data-file={entry.name}>
                <td>
                  {entry.type === 'directory' ? (
                    <button type="button" class="link" onClick={() => setDirectory(entry.path)}>
                      {entry.name}/
                    </button>
                  ) : (
                    <button type="button" class="link" onClick={() => void view(entry)} disabled={entry.type !== 'file'}>
                      {entry.name}
                      {entry.type === 'symlink' ? ` → ${entry.target ?? '?'}` : ''}
                    </button>
                  )}
                </td>
                <td class="num small">{entry.type === 'file' ? formatBytes(entry.size) : ''}</td>
                <td class="muted small hide-narrow">{formatInstant(entry.modifiedAt)}</td>
                <td>
                  {entry.type === 'file' ? (
                    <button type="button" class="ghost small" onClick={() => void download(entry.path)}>
                      Download
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {viewing ? (
        <div class="viewer" data-testid="file-viewer">
          <div class="viewer-head">
            <code>{viewing.path}</code> <span class="muted small">{formatBytes(viewing.size)}</span>
            <button type="button" class="ghost small" onClick={() => setViewing(null)}>
              Close
            </button>
          </div>
          {viewing.text === null ? <p class="muted">Not text: download it instead.</p> : <pre class="file-text">{viewing.text}</pre>}
          {viewing.truncated ? <p class="muted small">Showing the first {formatBytes(VIEW_LIMIT_BYTES)}; download for the rest.</p> : null}
        </div>
      ) : null}
    </div>
  );
}
