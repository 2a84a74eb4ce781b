/** A line chart over time in SVG: round axes, gaps where nothing was measured, a read-out of the values under the pointer (or the arrow keys). */
import { useId, useState } from 'preact/hooks';
import { clock, figure, hasValues, niceScale, timeTicks, type ChartData } from '../live-model.js';

const WIDTH = 400;
const HEIGHT = 178;
const LEFT = 44;
const RIGHT = 10;
const TOP = 20;
const BOTTOM = 22;
const PLOT_WIDTH = WIDTH - LEFT - RIGHT;
const PLOT_HEIGHT = HEIGHT - TOP - BOTTOM;

interface ChartProps {
  title: string;
  /** Shown on the y axis and after each value: `/s`, `ms`, `%`. */
  unit: string;
  data: ChartData;
  /** The time axis, epoch ms. */
  start: number;
  end: number;
  /** Said instead of drawing when no line has a value. */
  empty: string;
  /** A fixed top of the y axis (100 for a percentage). */
  top?: number;
  /** Each value holds for this long from its time (ms), drawn as a step: a minute's count is a segment a minute wide, never a lone dot. */
  step?: number;
}

function nearestIndex(times: readonly number[], time: number): number {
  let best = 0;
  for (let index = 1; index < times.length; index++) if (Math.abs(times[index]! - time) < Math.abs(times[best]! - time)) best = index;
  return best;
}

function latestIndex(values: readonly (number | null)[]): number | undefined {
  for (let index = values.length - 1; index >= 0; index--) if (values[index] !== null) return index;
  return undefined;
}

export function Chart({ title, unit, data, start, end, empty, top, step }: ChartProps) {
  const [hover, setHover] = useState<number | undefined>(undefined);
  const titleId = useId();
  const drawn = hasValues(data);
  const highest = Math.max(0, ...data.series.flatMap((line) => line.values.filter((value): value is number => value !== null)));
  const scale = niceScale(top ?? highest);
  const span = Math.max(1, end - start);
  const x = (time: number) => LEFT + ((time - start) / span) * PLOT_WIDTH;
  const y = (value: number) => TOP + PLOT_HEIGHT - (value / scale.max) * PLOT_HEIGHT;
  const withSeconds = span < 3 * 60_000;
  const format = (value: number | null | undefined) => (value === null || value === undefined ? '–' : `${figure(value)}${unit === '%' ? '%' : ` ${unit}`}`);

  const pointAt = (clientX: number, svg: SVGSVGElement) => {
    const box = svg.getBoundingClientRect();
    const time = start + (((clientX - box.left) / box.width) * WIDTH - LEFT) / PLOT_WIDTH * span;
    setHover(data.times.length === 0 ? undefined : nearestIndex(data.times, time));
  };
  const moveReadout = (event: KeyboardEvent) => {
    const last = data.times.length - 1;
    if (last < 0) return;
    if (event.key === 'ArrowLeft') setHover(Math.max(0, (hover ?? last + 1) - 1));
    else if (event.key === 'ArrowRight') setHover(Math.min(last, (hover ?? last - 1) + 1));
    else if (event.key === 'Escape') setHover(undefined);
    else return;
    event.preventDefault();
  };

  const readoutTime = hover === undefined ? undefined : data.times[hover];
  return (
    <figure class="chart" aria-labelledby={titleId}>
      <figcaption>
        <span class="chart-title" id={titleId}>
          {title}
        </span>
        <span class="readout" data-testid="readout">
          <span class="readout-time">{readoutTime === undefined ? 'latest' : clock(readoutTime, true)}</span>
          {data.series.map((line) => {
            const index = hover ?? latestIndex(line.values);
            return (
              <span key={line.label} class={`readout-value tone-${line.tone}`}>
                <span class="swatch" aria-hidden="true" /> {line.label} {format(index === undefined ? undefined : line.values[index])}
              </span>
            );
          })}
        </span>
      </figcaption>
      {!drawn ? (
        <p class="chart-empty">{empty}</p>
      ) : (
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          role="img"
          aria-label={`${title}: use the left and right arrow keys to read the values of each second`}
          tabIndex={0}
          onPointerMove={(event) => pointAt(event.clientX, event.currentTarget)}
          onPointerLeave={() => setHover(undefined)}
          onKeyDown={moveReadout}
          onBlur={() => setHover(undefined)}
        >
          <text class="axis-unit" x={LEFT - 6} y={10} text-anchor="end">
            {unit}
          </text>
          {scale.ticks.map((tick) => (
            <g key={`y${tick}`}>
              <line class="grid" x1={LEFT} x2={WIDTH - RIGHT} y1={y(tick)} y2={y(tick)} />
              <text class="axis-label" x={LEFT - 6} y={y(tick) + 4} text-anchor="end">
                {figure(tick)}
              </text>
            </g>
          ))}
          {timeTicks(start, end).map((tick) => (
            <g key={`x${tick}`}>
              <line class="tick" x1={x(tick)} x2={x(tick)} y1={TOP + PLOT_HEIGHT} y2={TOP + PLOT_HEIGHT + 4} />
              <text class="axis-label" x={x(tick)} y={HEIGHT - 5} text-anchor="middle">
                {clock(tick, withSeconds)}
              </text>
            </g>
          ))}
          <line class="axis" x1={LEFT} x2={WIDTH - RIGHT} y1={TOP + PLOT_HEIGHT} y2={TOP + PLOT_HEIGHT} />
          {data.series.map((line) => (
            <Line key={line.label} tone={line.tone} times={data.times} values={line.values} x={x} y={y} step={step} />
          ))}
          {readoutTime !== undefined && (
            <g class="cursor">
              <line x1={x(readoutTime)} x2={x(readoutTime)} y1={TOP} y2={TOP + PLOT_HEIGHT} />
              {data.series.map((line) => {
                const value = line.values[hover!];
                return value === null || value === undefined ? null : <circle key={line.label} class={`dot tone-${line.tone}`} cx={x(readoutTime)} cy={y(value)} r={3.5} />;
              })}
            </g>
          )}
        </svg>
      )}
    </figure>
  );
}

interface LineProps {
  tone: string;
  times: readonly number[];
  values: readonly (number | null)[];
  x: (time: number) => number;
  y: (value: number) => number;
  step: number | undefined;
}

/** One series: a path broken where a value is missing, and a dot for a value with none beside it (or, with `step`, a step each value wide). */
function Line({ tone, times, values, x, y, step }: LineProps) {
  let path = '';
  const lonely: number[] = [];
  const point = (time: number, value: number) => `${x(time).toFixed(1)},${y(value).toFixed(1)}`;
  values.forEach((value, index) => {
    if (value === null) return;
    const joined = index > 0 && values[index - 1] !== null;
    path += `${joined ? 'L' : 'M'}${point(times[index]!, value)}`;
    if (step !== undefined) path += `L${point(times[index]! + step, value)}`;
    else if (!joined && (index === values.length - 1 || values[index + 1] === null)) lonely.push(index);
  });
  return (
    <g class={`series tone-${tone}`}>
      <path d={path} />
      {lonely.map((index) => (
        <circle key={index} cx={x(times[index]!)} cy={y(values[index]!)} r={2.5} />
      ))}
    </g>
  );
}
