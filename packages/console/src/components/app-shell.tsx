/**
 * The frame of every page after login: navigation, the count of calls
 * waiting for a person, the state of the live stream, and log out.
 */
import type { ComponentChildren } from 'preact';
import { followLink } from '../router';
import type { Identity } from '../api-types';
import type { LiveState } from '../live-store';

/** Props of the shell. */
export interface AppShellProps {
  identity: Identity;
  live: LiveState;
  path: string;
  onLogout(): void;
  children: ComponentChildren;
}

/** Header, navigation and the page. */
export function AppShell({ identity, live, path, onLogout, children }: AppShellProps) {
  const pending = [...live.approvals.values()].filter((approval) => approval.state === 'pending').length;
  const link = (href: string, label: ComponentChildren, active: boolean) => (
    <a href={href} class={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined} onClick={(event) => followLink(event, href)}>
      {label}
    </a>
  );
  return (
    <div class="shell">
      <header class="topbar">
        <a href="/" class="brand" onClick={(event) => followLink(event, '/')}>
          Airlock
        </a>
        <nav class="nav">
          {link('/', 'Sessions', path === '/' || path.startsWith('/sessions'))}
          {link(
            '/approvals',
            <>
              Approvals{' '}
              {pending > 0 ? (
                <span class="count" data-testid="pending-count">
                  {pending}
                </span>
              ) : null}
            </>,
            path.startsWith('/approvals'),
          )}
        </nav>
        <span class={`stream stream-${live.status}`} role="status" data-testid="stream-status" title="the live event stream">
          {live.status === 'live' ? 'live' : live.status === 'connecting' ? 'connecting…' : 'reconnecting…'}
        </span>
        <span class="who" title={`token ${identity.tokenId}, tenant ${identity.tenant}, role ${identity.role}`}>
          {identity.name}
        </span>
        <button type="button" class="ghost" onClick={onLogout}>
          Log out
        </button>
      </header>
      {live.status === 'reconnecting' ? (
        <div class="banner banner-warning" role="alert" data-testid="stream-lost">
          The live stream to the server was lost{live.downSince ? ` ${Math.round((Date.now() - live.downSince) / 1000)} s ago` : ''}; reconnecting. What you see may be out of date until it is back.
        </div>
      ) : null}
      <main class="page">{children}</main>
    </div>
  );
}
