/**
 * The GPU list of the server (`kerncast.listGpus`) and how the extension shows it. Pure: no `vscode` import.
 */

export interface GpuInfo {
    id: string;
    name: string;
    calibrated: boolean;
}

/** Short labels of the shipped profiles, for the status bar; other ids are shown upper-cased. */
const SHORT_LABELS: Record<string, string> = {
    k20: 'K20',
    k4200: 'K4200',
    m60: 'M60',
    gtx1050: 'GTX 1050',
    v100: 'V100',
    t4: 'T4',
    a100: 'A100',
    l4: 'L4',
    rtx4090: 'RTX 4090',
    h100: 'H100',
};

/** The ids of the GPU profiles that ship with Kerncast. */
export const KNOWN_GPU_IDS: readonly string[] = Object.keys(SHORT_LABELS);

/** The short label of a GPU profile id: `v100` -> `V100`, `rtx4090` -> `RTX 4090`. */
export function gpuLabel(id: string): string {
    const trimmed = id.trim();
    if (/\.toml$/i.test(trimmed)) {
        // A profile file: its name without the directory and extension.
        return trimmed.replace(/^.*[\\/]/, '').replace(/\.toml$/i, '');
    }
    const key = trimmed.toLowerCase();
    return SHORT_LABELS[key] ?? (key === '' ? '?' : key.toUpperCase());
}

/** The status bar text for the active GPU. */
export function statusBarText(gpuId: string): string {
    return `$(pulse) Kerncast: ${gpuLabel(gpuId)}`;
}

/**
 * Validates the result of `kerncast.listGpus`: an array of `{id, name, calibrated}`. Entries without a string
 * id are dropped; a missing name falls back to the id, a missing `calibrated` to false. Duplicate ids keep the
 * first entry. Anything that is not an array throws, with a message saying what came back.
 */
export function parseGpuList(result: unknown): GpuInfo[] {
    if (!Array.isArray(result)) {
        throw new Error(`kerncast.listGpus returned ${describe(result)}, expected an array of GPUs`);
    }
    const seen = new Set<string>();
    const gpus: GpuInfo[] = [];
    for (const entry of result) {
        if (typeof entry !== 'object' || entry === null) {
            continue;
        }
        const record = entry as Record<string, unknown>;
        if (typeof record.id !== 'string' || record.id.trim() === '') {
            continue;
        }
        const id = record.id.trim();
        if (seen.has(id)) {
            continue;
        }
        seen.add(id);
        const name = typeof record.name === 'string' && record.name.trim() !== '' ? record.name.trim() : id;
        gpus.push({ id, name, calibrated: record.calibrated === true });
    }
    return gpus;
}

function describe(value: unknown): string {
    if (value === null) {
        return 'null';
    }
    if (Array.isArray(value)) {
        return 'an array';
    }
    return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A QuickPick entry (structurally a `vscode.QuickPickItem` plus the GPU id). */
export interface GpuPickItem {
    label: string;
    description: string;
    detail: string;
    picked: boolean;
    gpuId: string;
}

/** The QuickPick entries: the active GPU first, then the server's order. */
export function gpuPickItems(gpus: readonly GpuInfo[], current: string): GpuPickItem[] {
    const active = current.trim().toLowerCase();
    const items = gpus.map((gpu) => {
        const isCurrent = gpu.id.toLowerCase() === active;
        return {
            label: `${isCurrent ? '$(check) ' : ''}${gpu.name}`,
            description: isCurrent ? `${gpu.id} (active)` : gpu.id,
            detail: gpu.calibrated
                ? 'Calibrated: timing constants measured on this GPU'
                : 'Not calibrated: timing constants from specifications (run `kerncast calibrate` on this GPU)',
            picked: isCurrent,
            gpuId: gpu.id,
        };
    });
    const activeIndex = items.findIndex((item) => item.picked);
    if (activeIndex > 0) {
        items.unshift(...items.splice(activeIndex, 1));
    }
    return items;
}
