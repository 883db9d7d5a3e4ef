// Cuts a bundle's source map down to our own code. With --enable-source-maps, Node reads and JSON-parses
// the whole map when it loads the bundle: for the poller that was 1.7 MB, nearly all of it mappings for
// the AWS SDK and undici, whose minified frames nobody reads back to their sources. Keeping only the
// mappings into our own TypeScript keeps our stack frames pointing at `functions/…/*.ts` and makes the map
// a twentieth of the size; frames inside node_modules show their position in the bundle (index.mjs:line:col).
//
// Source map v3 (https://tc39.es/ecma426/): `mappings` is one group per generated line (`;`), one segment
// per mapped position (`,`), each segment 1, 4 or 5 base64 VLQ fields, all relative to the previous one.
// Node looks up a position by taking the nearest mapping at or before it, so a dependency's code right
// after ours must not inherit our mapping: where the code leaves our sources, a one-field segment (a
// position mapped to nothing) is kept in place of the dropped ones.

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUE = new Map([...BASE64].map((char, index) => [char, index]));

export interface SourceMapV3 {
  version: 3;
  sources: string[];
  names: string[];
  mappings: string;
  sourcesContent?: (string | null)[];
  [key: string]: unknown;
}

/** A source is ours unless it lies under a node_modules folder. */
export function isOwnSource(source: string): boolean {
  return !/(^|[/\\])node_modules[/\\]/.test(source);
}

function decodeSegment(segment: string): number[] {
  const fields: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64_VALUE.get(char);
    if (digit === undefined) throw new Error(`source map: invalid base64 VLQ character '${char}'`);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      fields.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  if (shift !== 0) throw new Error(`source map: truncated VLQ segment '${segment}'`);
  return fields;
}

function encodeField(field: number): string {
  let value = field < 0 ? (-field << 1) | 1 : field << 1;
  let out = '';
  do {
    let digit = value & 31;
    value >>>= 5;
    if (value > 0) digit |= 32;
    out += BASE64[digit];
  } while (value > 0);
  return out;
}

/** The map with only the mappings, sources and names of our own code. */
export function keepOwnCodeOnly(map: SourceMapV3): SourceMapV3 {
  if (map.version !== 3) throw new Error(`source map: version ${String(map.version)}, expected 3`);
  const sourceIndex = new Map<number, number>();
  const sources: string[] = [];
  const sourcesContent: (string | null)[] = [];
  map.sources.forEach((source, index) => {
    if (!isOwnSource(source)) return;
    sourceIndex.set(index, sources.length);
    sources.push(source);
    sourcesContent.push(map.sourcesContent?.[index] ?? null);
  });
  const nameIndex = new Map<number, number>();
  const names: string[] = [];

  // Absolute values of the fields relative across the whole map, in the input and in the output.
  const input = { source: 0, line: 0, column: 0, name: 0 };
  const output = { source: 0, line: 0, column: 0, name: 0 };
  /** The last segment written maps into our code (so a dependency's code after it needs a stop). */
  let lastWrittenIsOwn = false;

  const lines = map.mappings.split(';').map((line) => {
    let generatedColumn = 0;
    let writtenColumn = 0;
    const written: string[] = [];
    const write = (fields: number[]) => {
      written.push(fields.map(encodeField).join(''));
    };
    for (const segment of line.split(',')) {
      if (segment === '') continue;
      const fields = decodeSegment(segment);
      const [column = 0, source, originalLine, originalColumn, name] = fields;
      generatedColumn += column;
      if (source === undefined || originalLine === undefined || originalColumn === undefined) {
        // Already a position mapped to nothing: keep it.
        write([generatedColumn - writtenColumn]);
        writtenColumn = generatedColumn;
        lastWrittenIsOwn = false;
        continue;
      }
      input.source += source;
      input.line += originalLine;
      input.column += originalColumn;
      if (name !== undefined) input.name += name;
      const ownSource = sourceIndex.get(input.source);
      if (ownSource === undefined) {
        if (lastWrittenIsOwn) {
          write([generatedColumn - writtenColumn]);
          writtenColumn = generatedColumn;
          lastWrittenIsOwn = false;
        }
        continue;
      }
      const out = [
        generatedColumn - writtenColumn,
        ownSource - output.source,
        input.line - output.line,
        input.column - output.column,
      ];
      writtenColumn = generatedColumn;
      output.source = ownSource;
      output.line = input.line;
      output.column = input.column;
      if (name !== undefined) {
        const nameText = map.names[input.name];
        if (nameText === undefined) throw new Error(`source map: name index ${input.name} out of range`);
        let ownName = nameIndex.get(input.name);
        if (ownName === undefined) {
          ownName = names.length;
          nameIndex.set(input.name, ownName);
          names.push(nameText);
        }
        out.push(ownName - output.name);
        output.name = ownName;
      }
      write(out);
      lastWrittenIsOwn = true;
    }
    return written.join(',');
  });

  const trimmed: SourceMapV3 = { ...map, sources, names, mappings: lines.join(';') };
  if (map.sourcesContent) trimmed.sourcesContent = sourcesContent;
  else delete trimmed.sourcesContent;
  // Lists of source indices that no longer hold (and would list only dependencies anyway).
  delete trimmed.ignoreList;
  delete trimmed.x_google_ignoreList;
  return trimmed;
}
