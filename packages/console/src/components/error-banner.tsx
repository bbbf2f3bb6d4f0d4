/**
 * An error a person can act on: what happened, the API's stable code, and for
 * a refused call the policy's reason and the ids of the policies that decided.
 */
import { ApiError } from '../api-client';

/** Shows an error, or nothing. */
export function ErrorBanner({ error, onDismiss }: { error: unknown; onDismiss?: () => void }) {
  if (error === null || error === undefined) return null;
  const apiError = error instanceof ApiError ? error : null;
  const message = error instanceof Error ? error.message : String(error);
  const denied = apiError && (apiError.code === 'POLICY_DENIED' || apiError.code === 'APPROVAL_DENIED' || apiError.policyReason !== null);
  return (
    <div class={`banner ${denied ? 'banner-denied' : 'banner-error'}`} role="alert" data-code={apiError?.code ?? 'ERROR'}>
      <div class="banner-body">
        <strong>{denied ? 'Denied by policy' : 'Something went wrong'}</strong>
        {apiError ? <code class="banner-code">{apiError.code}</code> : null}
        <p class="banner-message">{message}</p>
        {apiError?.policyReason ? (
          <p class="banner-reason">
            Reason: <span data-testid="policy-reason">{apiError.policyReason}</span>
            {apiError.policyIds.length > 0 ? <span class="muted"> (policy {apiError.policyIds.join(', ')})</span> : null}
          </p>
        ) : null}
      </div>
      {onDismiss ? (
        <button type="button" class="ghost" aria-label="Dismiss" onClick={onDismiss}>
          ✕
        </button>
      ) : null}
    </div>
  );
}
