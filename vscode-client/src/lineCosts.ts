/**
 * The per-line cost decoration: the server's `kerncast.lineCosts` answer checked, and each hot line's share
 * turned into one of a few intensities and a short text at the end of the line. Pure: no `vscode` import.
 */

/** One hot line of the current text (0-based) with its share (0-1) of its kernel's dynamic energy. */
export interface LineCost {
    line: number;
    share: number;
    label: string;
}

/** Intensities of the decoration: a line's share falls in one of these bands (lower bounds). */
export const BANDS: readonly number[] = [0.01, 0.05, 0.15, 0.3, 0.5];

/** The lines of a `{version, lines}` answer, each checked; anything malformed is left out. */
export function parseLineCosts(result: unknown, lineCount: number): LineCost[] {
    if (typeof result !== 'object' || result === null) {
        return [];
    }
    const lines = (result as { lines?: unknown }).lines;
    if (!Array.isArray(lines)) {
        return [];
    }
    const out: LineCost[] = [];
    for (const entry of lines as unknown[]) {
        if (typeof entry !== 'object' || entry === null) {
            continue;
        }
        const e = entry as Record<string, unknown>;
        const { line, share, label } = e;
        if (typeof line !== 'number' || !Number.isInteger(line) || line < 0 || line >= lineCount) {
            continue;
        }
        if (typeof share !== 'number' || !(share >= BANDS[0]) || share > 1) {
            continue;
        }
        out.push({ line, share, label: typeof label === 'string' ? label.slice(0, 200) : `${Math.round(share * 100)}%` });
    }
    return out;
}

/** The band (index into `BANDS`) of a share: the last band whose lower bound it reaches. */
export function bandOf(share: number): number {
    let band = 0;
    for (let i = 0; i < BANDS.length; i++) {
        if (share >= BANDS[i]) {
            band = i;
        }
    }
    return band;
}

/** The background of a band: the same red as the report page's per-line bars, stronger for a larger share. */
export function bandColor(band: number): string {
    const alpha = [0.06, 0.12, 0.2, 0.3, 0.42][Math.max(0, Math.min(BANDS.length - 1, band))];
    return `rgba(214, 39, 40, ${alpha})`;
}

/** The text after a hot line, e.g. `  23% of matmul's energy (1.2 mJ)`. */
export function afterText(cost: LineCost): string {
    return `  ${cost.label}`;
}

/** The lines of each band, for one decoration type per band. */
export function byBand(costs: readonly LineCost[]): LineCost[][] {
    const out: LineCost[][] = BANDS.map(() => []);
    for (const cost of costs) {
        out[bandOf(cost.share)].push(cost);
    }
    return out;
}
