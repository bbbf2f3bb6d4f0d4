/** A session's audit records, newest first, with the result of verifying the hash chain. */
import { useEffect, useState } from 'preact/hooks';
import { api, sessionPath } from '../api-client';
import type { AuditVerification, StreamedAuditRecord } from '../api-types';
import { formatInstant, truncate } from '../format';

/** A short summary of what a record says. */
function summary(record: StreamedAuditRecord): string {
  const data = { ...record.data };
  for (const key of ['gen_ai.operation.name', 'gen_ai.tool.call.id']) delete data[key];
  return truncate(JSON.stringify(data), 240);
}

/** The audit panel. */
export function AuditLog({ sessionId, records }: { sessionId: string; records: StreamedAuditRecord[] }) {
  const [verification, setVerification] = useState<AuditVerification | null>(null);
  const [checking, setChecking] = useState(false);
  const [shown, setShown] = useState(50);

  async function verify(): Promise<void> {
    setChecking(true);
    try {
      setVerification(await api<AuditVerification>('GET', sessionPath(sessionId, '/audit/verify')));
    } finally {
      setChecking(false);
    }
  }
  // Verify again once new records have settled, so the badge speaks of the records shown.
  useEffect(() => {
    const timer = window.setTimeout(() => void verify().catch(() => undefined), records.length === 0 ? 0 : 1000);
    return () => window.clearTimeout(timer);
  }, [sessionId, records.length]);

  const newest = [...records].reverse();
  return (
    <div class="audit" data-testid="audit">
      <div class="audit-head">
        {verification ? (
          <span class={verification.ok ? 'badge ok' : 'badge bad'} data-testid="audit-verify">
            {verification.ok ? `chain intact · ${verification.records} records` : `chain broken${verification.problem ? ` at record ${verification.problem.seq}: ${verification.problem.message}` : ''}`}
          </span>
        ) : (
          <span class="muted">verifying…</span>
        )}
        <button type="button" class="ghost small" disabled={checking} onClick={() => void verify()}>
          Verify again
        </button>
      </div>
      <table class="audit-table">
        <thead>
          <tr>
            <th class="num">#</th>
            <th>When</th>
            <th>Event</th>
            <th class="hide-narrow">Data</th>
          </tr>
        </thead>
        <tbody>
          {newest.slice(0, shown).map((record) => (
            <tr data-seq={record.seq}>
              <td class="num muted">{record.seq}</td>
              <td class="small nowrap">{formatInstant(record.at)}</td>
              <td>
                <code class="small">{record.type}</code>
                {record.type === 'takeover.ended' && typeof record.data['recording'] === 'string' ? (
                  // The terminal's recording (asciicast v2): the login cookie authenticates the download.
                  <a class="small recording-link" href={record.data['recording']} download data-testid="takeover-recording">
                    recording
                  </a>
                ) : null}
              </td>
              <td class="mono small hide-narrow audit-data">{summary(record)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {newest.length > shown ? (
        <button type="button" class="more" onClick={() => setShown(shown + 200)}>
          Show older ({newest.length - shown})
        </button>
      ) : null}
    </div>
  );
}
