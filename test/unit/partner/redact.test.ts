// Token redaction from partner text: each form a partner may echo the token in.
import { describe, expect, it } from 'vitest';
import { PIECE_CHARS, redactToken } from '../../../functions/core/partner/redact.js';

// Characters that URL and form encoding treat differently (`!'()~`), `/` and `+` (base64), a space-free shape.
const TOKEN = "tk_A1b2/C3d4+E5f6~G7h8!I9j0(K1l2)'M3n4=";

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const b64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const formEncoded = new URLSearchParams([['t', TOKEN]]).toString().slice(2);

describe('redactToken', () => {
  it.each([
    ['the token itself', `invalid token ${TOKEN} given`],
    ['encodeURIComponent', `GET /cb?token=${encodeURIComponent(TOKEN)}&x=1`],
    ['form encoding', `body: token=${formEncoded}`],
    ['base64', `token was ${b64(TOKEN)}`],
    ['base64url', `token was ${b64url(TOKEN)}`],
    ['base64 inside Basic credentials (another byte offset)', `Basic ${b64(`user:${TOKEN}`)}`],
    ['base64url at the third byte offset', `x ${b64url(`ab${TOKEN}`)}`],
    ['a prefix cut short at the end', `message truncated: ${TOKEN.slice(0, 12)}`],
    ['a piece from the middle', `…${TOKEN.slice(10, 22)}…`],
    ['a prefix of its URL encoding', `url=/cb?t=${encodeURIComponent(TOKEN).slice(0, 15)}`],
  ])('removes %s', (_name, text) => {
    const out = redactToken(text, TOKEN);
    expect(out).toContain('[redacted]');
    for (const form of [TOKEN, encodeURIComponent(TOKEN), formEncoded, b64(TOKEN), b64url(TOKEN)]) {
      for (let i = 0; i + PIECE_CHARS <= form.length; i += 1) {
        expect(out).not.toContain(form.slice(i, i + PIECE_CHARS));
      }
    }
  });

  it('removes the value of any Bearer credential, whatever it is', () => {
    expect(redactToken('got Authorization: Bearer someone+elses/jwt; retry', TOKEN)).toBe(
      'got Authorization: Bearer [redacted] retry',
    );
    expect(redactToken('bearer   x', '')).toBe('Bearer [redacted]');
  });

  it('leaves text without the token as it is, keeping what surrounds a redaction', () => {
    expect(redactToken('pageId not found', TOKEN)).toBe('pageId not found');
    expect(redactToken(`a ${TOKEN} b`, TOKEN)).toBe('a [redacted] b');
  });

  it('matches a token shorter than a piece only whole, and ignores its short base64 fragments', () => {
    expect(redactToken('tok-a and tok-b; dG9r', 'tok-a')).toBe('[redacted] and tok-b; dG9r');
  });

  it('leaves pieces shorter than PIECE_CHARS (too likely to be ordinary text)', () => {
    const short = TOKEN.slice(0, PIECE_CHARS - 1);
    expect(redactToken(`end ${short}`, TOKEN)).toBe(`end ${short}`);
  });
});
