// Series and activity colors: distinct on a white background and for common color-vision
// deficiencies (blue/orange lead), reused cyclically past ten.
const COLORS = [
  '#2563eb', '#ea580c', '#16a34a', '#9333ea', '#dc2626',
  '#0891b2', '#ca8a04', '#db2777', '#4b5563', '#65a30d',
];

export function colorAt(index) {
  return COLORS[((index % COLORS.length) + COLORS.length) % COLORS.length];
}
