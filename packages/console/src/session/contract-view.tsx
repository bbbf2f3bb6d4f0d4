/** The contract a session runs under: its objective, tools and limits first, the whole text on request. */
import { useEffect, useState } from 'preact/hooks';
import { contractOf, objectiveOf, type ContractInfo } from '../session-context';

/** The contract panel. */
export function ContractView({ sessionId }: { sessionId: string }) {
  const [info, setInfo] = useState<ContractInfo | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    contractOf(sessionId).then(setInfo, (failure: Error) => setError(failure.message));
  }, [sessionId]);
  if (error) return <p class="form-error">{error}</p>;
  if (!info) return <p class="muted">Loading the contract…</p>;
  const contract = info.contract;
  const objective = objectiveOf(contract);
  const tools = Array.isArray(contract['tools']) ? (contract['tools'] as string[]) : [];
  const policies = Array.isArray(contract['policies']) ? contract['policies'].length : 0;
  return (
    <div class="contract" data-testid="contract">
      <dl class="facts">
        <dt>Version</dt>
        <dd>{info.version}</dd>
        {objective ? (
          <>
            <dt>Objective</dt>
            <dd>{objective}</dd>
          </>
        ) : null}
        <dt>Tools</dt>
        <dd>{tools.join(', ') || 'none'}</dd>
        <dt>Policies</dt>
        <dd>{policies} Cedar {policies === 1 ? 'policy' : 'policies'}</dd>
      </dl>
      <details>
        <summary>Whole contract</summary>
        <pre class="json">{JSON.stringify(contract, null, 2)}</pre>
      </details>
    </div>
  );
}
