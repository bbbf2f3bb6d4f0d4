/** How numbers, sizes and times read in the console. */

/** 1536 → "1.5 KiB". */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes <= 0) return '0 B';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const exponent = Math.min(Math.floor(Math.log(bytes) / Math.log(1024)), units.length - 1);
  const value = bytes / 1024 ** exponent;
  return `${value >= 100 || exponent === 0 ? Math.round(value) : value.toFixed(1)} ${units[exponent]}`;
}

/** 3725 → "1 h 2 min". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '–';
  if (seconds === 0) return '0 s';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d`;
}

/** Time since an ISO instant, e.g. "3 min". */
export function age(iso: string, now: number = Date.now()): string {
  return formatDuration(Math.max(0, (now - Date.parse(iso)) / 1000));
}

/** An ISO instant as local date and time, to the second. */
export function formatInstant(iso: string | null | undefined): string {
  if (!iso) return '–';
  const date = new Date(iso);
  return `${date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${date.toLocaleTimeString(undefined, { hour12: false })}`;
}

/** CPU seconds, short. */
export function formatCpu(seconds: number): string {
  return seconds < 10 ? `${seconds.toFixed(2)} s` : formatDuration(seconds);
}

/** The first `length` characters, with an ellipsis when cut. */
export function truncate(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}
