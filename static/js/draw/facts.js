// How the server's facts read as text, shared by the page and a rollout's snapshot file
// (views/record/snapshot.py inlines this module in the file's one script, its `export`s dropped): so it
// imports nothing, and holds no state.

// one formatter for every number: toLocaleString() builds a new one per call, which costs ~100 ms
// over the thousands of block sizes a big rollout's strips show
const GROUPED = new Intl.NumberFormat("en-US");

export function num(value) {
  if (value === null || value === undefined) return "-";
  if (typeof value === "boolean") return value ? "1" : "0";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? GROUPED.format(value) : value.toFixed(2);
}

export function plural(count, word, many = `${word}s`) {
  return `${num(count)} ${count === 1 ? word : many}`;
}

/** "tok" or "ch", the short label of a unit. */
export function unitShort(unit) {
  return unit === "tokens" ? "tok" : "ch";
}

// Characters that change how text reads without being seen. Direction controls reorder what follows
// them (an override shows `evil\u202eexe.txt` as `eviltxt.exe`): always shown as a mark, never applied,
// as the terminal escapes them (commands/terminal.py BIDI). Zero-width characters, the BOM, separators
// and C0/C1 controls hide or break text: shown under "control chars" (`showControls`).
const BIDI_NAMES = {
  "\u061c": "ALM", "\u200e": "LRM", "\u200f": "RLM", "\u202a": "LRE", "\u202b": "RLE", "\u202c": "PDF",
  "\u202d": "LRO", "\u202e": "RLO", "\u2066": "LRI", "\u2067": "RLI", "\u2068": "FSI", "\u2069": "PDI",
};
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const HIDDEN_NAMES = {
  "\u00ad": "SHY", "\u200b": "ZWSP", "\u200c": "ZWNJ", "\u200d": "ZWJ", "\u2060": "WJ", "\ufeff": "BOM",
  "\u2028": "LSEP", "\u2029": "PSEP", "\u007f": "DEL",
};
const HIDDEN = /[\u00ad\u200b-\u200d\u2060\ufeff\u2028\u2029\u007f-\u009f]/g;

/** The mark a character is shown as: ⟨its name⟩, or ⟨U+XXXX⟩. */
function mark(names, c) {
  return `⟨${names[c] ?? `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`}⟩`;
}

/** Record text as every view shows it (Path, Chat, Tree, Forks, JSON, find results, the snapshot): direction
 *  controls always as marks (`⟨RLO⟩`); with `showControls`, also line breaks (↵), tabs (→), carriage returns
 *  (␍, a lone one included), C0 controls (their pictures), and zero-width characters, the BOM, separators,
 *  DEL and C1 controls as marks. Each character maps on its own, so a prefix's shown length places a
 *  match (`shownLength`). */
export function visible(text, showControls) {
  const marked = text.replace(BIDI, (c) => mark(BIDI_NAMES, c));
  if (!showControls) return marked;
  return marked.replace(/\r/g, "␍").replace(/\t/g, "→\t").replace(/\n/g, "↵\n")
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, (c) => String.fromCharCode(0x2400 + c.charCodeAt(0)))
    .replace(HIDDEN, (c) => mark(HIDDEN_NAMES, c));
}

/** Where offset `at` of `text` (UTF-16) lands in `visible(text, showControls)`: a find's match in the
 *  record's text, placed in what is drawn. */
export function shownLength(text, at, showControls) {
  return visible(text.slice(0, at), showControls).length;
}

/** The logprob colours, most likely first: [lowest probability of the band, class, label]. The
 *  legend (notable.js) is drawn from this same list, so it names the bands the tokens are shaded by. */
export const LOGPROB_BANDS = [
  [0.9, "lp-0", "p ≥ 0.9"], [0.5, "lp-1", "p ≥ 0.5"], [0.2, "lp-2", "p ≥ 0.2"],
  [0.05, "lp-3", "p ≥ 0.05"], [0, "lp-4", "p < 0.05"],
];

/** The class a sampled token is shaded with for its logprob (`lp-x`: unknown). */
export function logprobBand(logprob) {
  if (logprob === null || logprob === undefined) return "lp-x";
  const p = Math.exp(logprob);
  return LOGPROB_BANDS.find(([least]) => p >= least)[1];
}

/** What a token says when hovered: token `i` of `node`, in `block` (the server's /paths facts): its
 *  text, position in the path, id, whether it is in the loss, the image it is a placeholder of, and
 *  for a sampled token its logprob and what its sampling mask says. */
export function tokenFacts(block, node, i) {
  const hasText = node.text !== null && node.text !== undefined && node.token_offsets;
  const piece = hasText ? node.text.slice(node.token_offsets[i], node.token_offsets[i + 1]) : null;
  const position = block.start + (i - block.node_start);
  const loss = block.kind === "sampled" ? "in the loss"
    : block.kind === "sampled-elsewhere" ? `masked (trained in path ${block.trained_in})`
    : block.kind === "sampled-untrained" ? "masked (the record trains it on no path)" : "masked";
  const parts = [hasText ? visible(JSON.stringify(piece), false) : "(no text)", `#${position}`,
    `id ${node.token_ids[i]}`, loss];
  if (hasText && piece === "") parts.push("owns no whole character: it shares one with the next token");
  const media = mediaAt(node, i);
  if (media) parts.push(`placeholder of ${media.label}`);
  if (i >= (node.sampled_start ?? Infinity)) {
    const logprob = node.logprobs ? node.logprobs[i] : null;
    parts.push(logprob === null || logprob === undefined ? "logprob unknown"
      : `logprob ${logprob.toFixed(4)} · p ${Math.exp(logprob).toFixed(3)}`);
    parts.push(supportFact(node, i));
  }
  return parts.join(" · ");
}

/** The media item (image) whose placeholder tokens hold token `i` of `node`, or undefined. */
function mediaAt(node, i) {
  return (node.media ?? []).find((item) => item.offset !== null && item.offset <= i && i < item.offset + item.length);
}

/** What the server read of sampled token `i`'s sampling mask: its support size and whether the id
 *  sampled is in it, or that the node records none. */
function supportFact(node, i) {
  const size = node.support_sizes?.[i - node.sampled_start];
  if (size === undefined || size === null) return "no support recorded";
  const inside = !(node.outside_support || []).includes(i);
  const verdict = inside ? "sampled id in it" : "sampled id NOT in it (a sampler or logprobs_mode bug)";
  return `support ${size} id${size === 1 ? "" : "s"}, ${verdict}`;
}
