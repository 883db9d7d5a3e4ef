// Text helpers shared by the ops commands: aligned tables for people, shortened cursors, durations.
// Pure, so the commands' output is unit-tested without AWS.

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A partner cursor is long and opaque: its head and tail are enough to tell two apart at a glance. */
export function shortenCursor(pageId: string | undefined, keep = 8): string {
  if (pageId === undefined) return '(start)';
  if (pageId.length <= keep * 2 + 1) return pageId;
  return `${pageId.slice(0, keep)}…${pageId.slice(-keep)}`;
}

/** 0s, 42s, 5m 3s, 2h 10m, 3d 4h: the two largest units that are not zero. */
export function formatDuration(ms: number): string {
  let rest = Math.max(0, Math.floor(ms / 1000));
  const parts: string[] = [];
  for (const [name, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count > 0 || parts.length > 0) parts.push(`${count}${name}`);
  }
  return parts.length === 0 ? '0s' : parts.slice(0, 2).join(' ');
}

/** The name a queue URL ends with (the queue's name on AWS and in the emulator). */
export function queueNameOf(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}
