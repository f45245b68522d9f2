// The demo shop's data and its cart (localStorage). Kept small and stable: the scripted demo
// relies on the element numbers inspect_page gives for these pages.
const PRODUCTS = [
  { id: 'kettle', name: 'Copper Tea Kettle', price: 34.0, blurb: 'A 1.2 l stovetop kettle with a whistle.' },
  { id: 'teapot', name: 'Glass Teapot', price: 22.5, blurb: 'Borosilicate glass, 800 ml, with an infuser.' },
  { id: 'mug', name: 'Stoneware Mug', price: 12.0, blurb: 'Hand-glazed, 350 ml.' },
  { id: 'grinder', name: 'Burr Coffee Grinder', price: 59.0, blurb: 'Forty grind settings.' },
];
const money = (n) => `$${n.toFixed(2)}`;
const cart = {
  items: () => JSON.parse(localStorage.getItem('cart') || '[]'),
  add: (id) => localStorage.setItem('cart', JSON.stringify([...cart.items(), id])),
  clear: () => localStorage.removeItem('cart'),
};
function productList(list, products) {
  list.replaceChildren(...products.map((p) => {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = `product.html?id=${p.id}`;
    a.textContent = p.name;
    const price = document.createElement('span');
    price.className = 'price';
    price.textContent = money(p.price);
    li.append(a, price);
    return li;
  }));
}
document.addEventListener('DOMContentLoaded', () => {
  const count = document.getElementById('cart-count');
  if (count) count.textContent = String(cart.items().length);
});
