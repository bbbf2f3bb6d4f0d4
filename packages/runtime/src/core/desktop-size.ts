/** The size of a session's display: the contract's `desktop.width` / `.height`, 1280×800 by default. */
import type { SessionRecord } from './session.js';

/** Display width when the contract does not say. */
export const DEFAULT_DESKTOP_WIDTH = 1280;
/** Display height when the contract does not say. */
export const DEFAULT_DESKTOP_HEIGHT = 800;

/** Width and height of the display a session's contract asks for (contracts stored before the key existed get the default). */
export function desktopSize(session: Pick<SessionRecord, 'contract'>): { width: number; height: number } {
  const declared = session.contract['desktop'] as { width?: number; height?: number } | undefined;
  return { width: declared?.width ?? DEFAULT_DESKTOP_WIDTH, height: declared?.height ?? DEFAULT_DESKTOP_HEIGHT };
}
