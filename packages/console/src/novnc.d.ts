/** The part of noVNC's RFB client the console uses (noVNC ships no types; the DefinitelyTyped ones describe an older layout). */
declare module '@novnc/novnc' {
  /** A VNC connection drawing into `target`. */
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: { shared?: boolean });
    viewOnly: boolean;
    scaleViewport: boolean;
    resizeSession: boolean;
    focusOnClick: boolean;
    background: string;
    disconnect(): void;
  }
}
