/** Every time the dashboard shows, in one format: the browser's local time as `YYYY-MM-DD HH:MM:SS`, as the time filters take it. */
const pad = (number: number) => String(number).padStart(2, '0');

export function displayTime(iso: string): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return iso;
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())} ${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}`;
}

/** A time as every screen shows it, the exact instant (UTC) in its title. */
export function Time({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={iso}>
      {displayTime(iso)}
    </time>
  );
}
