/** The queue of calls held for a person, across sessions, arriving live; decided ones below. */
import { useMemo, useState } from 'preact/hooks';
import type { LiveState } from '../live-store';
import { ApprovalCard } from '../components/approval-card';

/** The approvals page. */
export function ApprovalsPage({ live }: { live: LiveState }) {
  const [tab, setTab] = useState<'pending' | 'decided'>('pending');
  const all = useMemo(() => [...live.approvals.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt)), [live.approvals]);
  const pending = all.filter((approval) => approval.state === 'pending');
  const decided = all.filter((approval) => approval.state !== 'pending');
  const shown = tab === 'pending' ? pending : decided.slice(0, 100);
  return (
    <section>
      <div class="page-head">
        <h1>Approvals</h1>
        <div class="tabs" role="tablist">
          <button type="button" role="tab" aria-selected={tab === 'pending'} class={tab === 'pending' ? 'tab active' : 'tab'} onClick={() => setTab('pending')}>
            Waiting ({pending.length})
          </button>
          <button type="button" role="tab" aria-selected={tab === 'decided'} class={tab === 'decided' ? 'tab active' : 'tab'} onClick={() => setTab('decided')}>
            Decided ({decided.length})
          </button>
        </div>
      </div>
      {!live.loaded ? <p class="muted">Loading approvals…</p> : null}
      {live.loaded && shown.length === 0 ? (
        <p class="empty" data-testid="no-approvals">
          {tab === 'pending' ? 'Nothing is waiting for you. A call a policy holds for a person appears here at once.' : 'No decisions yet.'}
        </p>
      ) : null}
      <div class="cards" data-testid={`approvals-${tab}`}>
        {shown.map((approval) => (
          <ApprovalCard key={approval.id} approval={approval} />
        ))}
      </div>
    </section>
  );
}
