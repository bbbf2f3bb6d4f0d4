/** The login form: the API token, in a password field, exchanged for a login cookie. */
import { useState } from 'preact/hooks';
import { api, ApiError, setCsrfToken } from '../api-client';
import type { LoginInfo } from '../api-types';

/** Props of the login page. */
export interface LoginPageProps {
  /** why the person is here again (an expired login, a log out) */
  notice: string | null;
  onLoggedIn(login: LoginInfo): void;
}

/** Asks for the API token. */
export function LoginPage({ notice, onLoggedIn }: LoginPageProps) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: Event): Promise<void> {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const login = await api<LoginInfo>('POST', '/v1/login', { token: token.trim() }, { quiet401: true });
      setCsrfToken(login.csrfToken);
      setToken('');
      onLoggedIn(login);
    } catch (failure) {
      setError(failure instanceof ApiError && failure.code === 'UNAUTHORIZED' ? 'That token is not this server’s API token. Check it and try again.' : (failure as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="login">
      <form class="login-card" onSubmit={(event) => void submit(event)}>
        <h1>Airlock</h1>
        <p class="muted">Approvals, live sessions and the audit of this server.</p>
        {notice ? (
          <div class="banner banner-warning" role="status" data-testid="login-notice">
            {notice}
          </div>
        ) : null}
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="current-password"
          required
          value={token}
          onInput={(event) => setToken((event.target as HTMLInputElement).value)}
          placeholder="printed by airlock serve"
        />
        {error ? (
          <p class="form-error" role="alert" data-testid="login-error">
            {error}
          </p>
        ) : null}
        <button type="submit" class="primary" disabled={busy || token.trim() === ''}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
        <p class="hint">
          The token stays on the server: this browser keeps only a login cookie, which ends when you log out. Find the token in the data dir (<code>/var/lib/airlock/token</code> for root) or in the output of <code>airlock serve</code>.
        </p>
      </form>
    </div>
  );
}
