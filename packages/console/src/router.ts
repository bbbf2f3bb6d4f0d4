/**
 * Client routes over the history API. The server answers index.html for any
 * path without an extension, so every route is also a link one can share.
 */
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => notify());

function notify(): void {
  for (const listener of listeners) listener();
}

/** Goes to a path of the console. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.scrollTo(0, 0);
  notify();
}

/** Where the console is. */
export interface Place {
  path: string;
  query: URLSearchParams;
}

/** The current path and query; re-renders on navigation. */
export function usePlace(): Place {
  const [, setVersion] = useState(0);
  useEffect(() => {
    const listener = () => setVersion((version) => version + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** Handles a click on an in-console link without reloading the page (new-tab clicks stay native). */
export function followLink(event: MouseEvent, href: string): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(href);
}
