/** A modal question before an action that destroys something; Escape or Cancel keeps everything as it is. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/** Props of the dialog. */
export interface ConfirmDialogProps {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  /** a red confirm button for what cannot be undone */
  destructive?: boolean;
  onConfirm(): void;
  onCancel(): void;
}

/** Asks before doing. */
export function ConfirmDialog(props: ConfirmDialogProps) {
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    cancel.current?.focus();
    const onKey = (event: KeyboardEvent) => event.key === 'Escape' && props.onCancel();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="overlay" onClick={(event) => event.target === event.currentTarget && props.onCancel()}>
      <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="dialog-title">
        <h2 id="dialog-title">{props.title}</h2>
        <div class="dialog-body">{props.children}</div>
        <div class="dialog-actions">
          <button type="button" ref={cancel} onClick={props.onCancel}>
            Cancel
          </button>
          <button type="button" class={props.destructive ? 'danger' : 'primary'} onClick={props.onConfirm}>
            {props.confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
