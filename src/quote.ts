// Showing caller-supplied text in messages and logs: a short, escaped prefix, never the whole of it.

/** Characters of caller text shown in a message, at most. */
export const QUOTE_MAX = 64;

/**
 * text as a double-quoted JSON string of at most max characters (control characters, quotes and non-ASCII
 * escaped), with the original length appended when it was cut. Safe to put in any error or log line.
 */
export function quote(text: string, max = QUOTE_MAX): string {
  const cut = text.length > max;
  // Escape every non-printable or non-ASCII character so that nothing a caller sends can forge a log line.
  const shown = JSON.stringify(cut ? text.slice(0, max) : text).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return cut ? `${shown.slice(0, -1)}..." (${text.length} characters)` : shown;
}
