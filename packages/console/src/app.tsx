/**
 * The console: asks the server who is logged in, shows the login form when
 * nobody is (or the login ended), and otherwise the page of the current route
 * inside the shell, with the live store running.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, isLoginLost, setCsrfToken, whenLoginLost } from './api-client';
import type { Identity, LoginInfo } from './api-types';
import { navigate, usePlace } from './router';
import { startLiveStore, stopLiveStore, useLiveStore } from './live-store';
import { AppShell } from './components/app-shell';
import { LoginPage } from './pages/login-page';
import { SessionsPage } from './pages/sessions-page';
import { SessionPage } from './pages/session-page';
import { ApprovalsPage } from './pages/approvals-page';

type LoginState = { kind: 'checking' } | { kind: 'out'; notice: string | null } | { kind: 'in'; identity: Identity };

/** The whole console. */
export function App() {
  const [login, setLogin] = useState<LoginState>({ kind: 'checking' });
  const place = usePlace();
  const live = useLiveStore();

  useEffect(() => {
    whenLoginLost((error) => {
      stopLiveStore();
      setCsrfToken(null);
      setLogin({ kind: 'out', notice: error.code === 'LOGIN_EXPIRED' ? 'Your login expired or was ended. Log in again to go on where you were.' : null });
    });
    api<LoginInfo>('GET', '/v1/whoami', undefined, { quiet401: true }).then(
      (info) => {
        setCsrfToken(info.csrfToken);
        setLogin({ kind: 'in', identity: info.identity });
      },
      (error: unknown) => setLogin({ kind: 'out', notice: isLoginLost(error) && error.code === 'LOGIN_EXPIRED' ? 'Your login expired. Log in again.' : null }),
    );
  }, []);

  useEffect(() => {
    if (login.kind === 'in') startLiveStore();
  }, [login.kind]);

  if (login.kind === 'checking') return <p class="muted center">Connecting to the server…</p>;
  if (login.kind === 'out') {
    return (
      <LoginPage
        notice={login.notice}
        onLoggedIn={(info) => {
          setLogin({ kind: 'in', identity: info.identity });
          if (place.path === '/login') navigate('/', { replace: true });
        }}
      />
    );
  }

  async function logout(): Promise<void> {
    try {
      await api('POST', '/v1/logout');
    } finally {
      stopLiveStore();
      setCsrfToken(null);
      setLogin({ kind: 'out', notice: 'You are logged out.' });
      navigate('/', { replace: true });
    }
  }

  const sessionMatch = /^\/sessions\/([^/]+)$/.exec(place.path);
  let page;
  if (sessionMatch?.[1]) page = <SessionPage key={sessionMatch[1]} sessionId={decodeURIComponent(sessionMatch[1])} live={live} />;
  else if (place.path === '/approvals') page = <ApprovalsPage live={live} />;
  else if (place.path === '/' || place.path === '/sessions' || place.path === '/login') page = <SessionsPage live={live} />;
  else page = <p class="empty">There is no page {place.path} in the console. <a href="/">Sessions</a></p>;
  return (
    <AppShell identity={login.identity} live={live} path={place.path} onLogout={() => void logout()}>
      {page}
    </AppShell>
  );
}
