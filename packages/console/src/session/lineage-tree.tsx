/**
 * Where a session comes from and what came of it: its root ancestor, the
 * snapshots of every session in the family, and the branches forked from
 * each, as a tree of links.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api-client';
import type { SessionInfo, SnapshotInfo } from '../api-types';
import { StateBadge } from '../components/state-badge';
import { formatInstant } from '../format';
import { followLink } from '../router';

/** The lineage of `session` among `sessions`; `auditLength` changes when it may have grown. */
export function LineageTree({ session, sessions, auditLength }: { session: SessionInfo; sessions: Map<string, SessionInfo>; auditLength: number }) {
  const [snapshots, setSnapshots] = useState<SnapshotInfo[]>([]);
  useEffect(() => {
    api<{ snapshots: SnapshotInfo[] }>('GET', '/v1/snapshots')
      .then((answer) => setSnapshots(answer.snapshots.filter((snapshot) => snapshot.reason !== 'suspend')))
      .catch(() => undefined);
    // A snapshot or fork appends to the session's audit: that is when to look again.
  }, [session.id, auditLength]);

  let root = session;
  const seen = new Set<string>([root.id]);
  while (root.lineage) {
    const parent = sessions.get(root.lineage.parentSessionId);
    if (!parent || seen.has(parent.id)) break;
    seen.add(parent.id);
    root = parent;
  }
  const branchesOf = new Map<string, SessionInfo[]>();
  for (const candidate of sessions.values()) {
    if (!candidate.lineage) continue;
    const list = branchesOf.get(candidate.lineage.parentSessionId) ?? [];
    list.push(candidate);
    branchesOf.set(candidate.lineage.parentSessionId, list);
  }
  const single = !root.lineage && (branchesOf.get(root.id) ?? []).length === 0 && !snapshots.some((snapshot) => snapshot.sessionId === root.id);
  if (single) return <p class="muted" data-testid="lineage">No snapshots or forks yet. Take a snapshot or fork the session to grow its tree.</p>;
  return (
    <ul class="tree" data-testid="lineage">
      <LineageNode node={root} current={session.id} branchesOf={branchesOf} snapshots={snapshots} depth={0} />
    </ul>
  );
}

function LineageNode(props: { node: SessionInfo; current: string; branchesOf: Map<string, SessionInfo[]>; snapshots: SnapshotInfo[]; depth: number }) {
  const { node, current, branchesOf, snapshots, depth } = props;
  const href = `/sessions/${encodeURIComponent(node.id)}`;
  const branches = (branchesOf.get(node.id) ?? []).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const own = snapshots.filter((snapshot) => snapshot.sessionId === node.id);
  const bySnapshot = (snapshotId: string | null) => branches.filter((branch) => (branch.lineage?.snapshotId ?? null) === snapshotId);
  const loose = branches.filter((branch) => !own.some((snapshot) => snapshot.id === branch.lineage?.snapshotId));
  return (
    <li>
      <span class={node.id === current ? 'tree-node current' : 'tree-node'}>
        {node.id === current ? <strong class="mono">{node.id}</strong> : <a href={href} class="mono" onClick={(event) => followLink(event, href)}>{node.id}</a>}{' '}
        <StateBadge session={node} />
        {node.lineage ? <span class="muted small"> branch {node.lineage.branchIndex}</span> : null}
      </span>
      {depth < 8 && (own.length > 0 || loose.length > 0) ? (
        <ul>
          {own.map((snapshot) => (
            <li>
              <span class="tree-node snapshot">
                ◆ snapshot <span class="mono">{snapshot.id}</span> {snapshot.name ? <em>{snapshot.name}</em> : null} <span class="muted small">{snapshot.reason} · {formatInstant(snapshot.createdAt)} · {snapshot.state}</span>
              </span>
              {bySnapshot(snapshot.id).length > 0 ? (
                <ul>
                  {bySnapshot(snapshot.id).map((branch) => (
                    <LineageNode node={branch} current={current} branchesOf={branchesOf} snapshots={snapshots} depth={depth + 1} />
                  ))}
                </ul>
              ) : null}
            </li>
          ))}
          {loose.map((branch) => (
            <LineageNode node={branch} current={current} branchesOf={branchesOf} snapshots={snapshots} depth={depth + 1} />
          ))}
        </ul>
      ) : null}
    </li>
  );
}
