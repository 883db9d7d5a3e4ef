// Which forms of the token, and why: functions/README.md, "The token in partner text". Over-redacting is harmless.
const REDACTED = '[redacted]';

/** Shorter pieces of a token are too likely to match ordinary text, and say little about the token. */
export const PIECE_CHARS = 8;

const BEARER = /\bBearer\s+\S+/gi;

/** The token's base64 at each byte offset in a longer value: only the characters wholly from the token. */
function base64Forms(token: Buffer): string[] {
  const forms: string[] = [];
  for (const offset of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(offset), token]).toString('base64');
    const total = offset + token.length;
    const start = [0, 2, 3][offset] ?? 0;
    const end = Math.floor(total / 3) * 4 + (total % 3); // a last partial group: 1 or 2 whole characters
    const core = encoded.slice(start, end);
    forms.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return forms;
}

function tokenForms(token: string): string[] {
  const forms = [
    token,
    encodeURIComponent(token),
    new URLSearchParams([['', token]]).toString().slice(1),
    ...base64Forms(Buffer.from(token, 'utf8')),
  ];
  // A form shorter than the token itself (a base64 core of a short token) would match ordinary text.
  const shortest = Math.min(PIECE_CHARS, token.length);
  return [...new Set(forms.filter((form) => form.length >= shortest))];
}

/** Per token: the whole forms shorter than a piece, and every piece of PIECE_CHARS of the longer ones. */
function matcher(token: string) {
  const short: string[] = [];
  const pieces = new Set<string>();
  for (const form of tokenForms(token)) {
    if (form.length < PIECE_CHARS) short.push(form);
    else for (let i = 0; i + PIECE_CHARS <= form.length; i += 1) pieces.add(form.slice(i, i + PIECE_CHARS));
  }
  return { short, pieces };
}

let cached: { token: string; matcher: ReturnType<typeof matcher> } | undefined;

/** `text` with every form of `token` (and any bearer credential) replaced by `[redacted]`. */
export function redactToken(text: string, token: string): string {
  const withoutBearer = text.replace(BEARER, `Bearer ${REDACTED}`);
  if (token === '') return withoutBearer;
  if (cached?.token !== token) cached = { token, matcher: matcher(token) };
  const { short, pieces } = cached.matcher;
  let out = withoutBearer;
  for (const form of short) out = out.split(form).join(REDACTED);
  // Mark every character covered by a piece of any form; overlapping pieces cover a longer run of it.
  const covered = new Uint8Array(out.length);
  for (let i = 0; i + PIECE_CHARS <= out.length; i += 1) {
    if (pieces.has(out.slice(i, i + PIECE_CHARS))) covered.fill(1, i, i + PIECE_CHARS);
  }
  if (!covered.includes(1)) return out;
  let result = '';
  for (let i = 0; i < out.length; i += 1) {
    if (!covered[i]) result += out[i];
    else if (i === 0 || !covered[i - 1]) result += REDACTED;
  }
  return result;
}
